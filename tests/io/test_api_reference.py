"""The API reference at /docs: the service's own /openapi.json rendered in a real browser
(Debian's chromium through Selenium, as tests/io/test_console.py drives the console),
served like the console's files: without the key, under the same strict policy. The
document itself still needs the key, so the page asks for it as the console does and
keeps it where the console does. With RAGCHAT_SCREENSHOTS=<folder>, screenshots of the
page (wide, and on a phone at a deep link) are saved there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ragio.http.console import POLICY
from tests.io.test_console import browser, browser_errors

KEY = "reference-key-0123"
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
FILTER = "post widget/sites"  # every word must be found: the method and a path's part


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"service_api_key": KEY}


async def test_the_reference_is_served_with_the_consoles_policy_and_without_the_key(api):
    for path, kind in (
        ("/docs", "text/html"),
        ("/console/docs.js", "text/javascript"),
        ("/console/docs.css", "text/css"),
    ):
        response = await api.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(kind)
        assert response.headers["content-security-policy"] == POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
    page = (await api.get("/docs")).text
    assert '<script src="/console/docs.js" defer></script>' in page
    assert "<script>" not in page and "style=" not in page  # nothing inline
    script = (await api.get("/console/docs.js")).text
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script  # text as text
    assert (await api.get("/openapi.json")).status_code == 401  # the document needs the key


def operations(document: dict[str, Any]) -> dict[str, str]:
    """Each operation's anchor (``post-/chat``) and the text the filter reads in it."""
    found = {}
    for path, item in document["paths"].items():
        for method in (m for m in METHODS if m in item):
            operation = item[method]
            names = [p["name"] for p in operation.get("parameters", [])]
            words = [method, path, operation.get("summary", ""), operation.get("description", "")]
            found[f"{method}-{path}"] = " ".join(words + names).lower()
    return found


def read_the_reference(base_url: str, shots: Path | None) -> dict[str, Any]:
    """Sign in on /docs, read it, filter it, follow a deep link on a phone's width."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as shown
    from selenium.webdriver.support.ui import WebDriverWait

    seen: dict[str, Any] = {}
    shown_ids = (
        "return [...document.querySelectorAll('section.operation')]"
        ".filter(s => s.offsetParent !== null).map(s => s.id)"
    )
    unlabelled = (
        "return [...document.querySelectorAll('input, select, textarea')]"
        ".filter(e => !e.labels || !e.labels.length).map(e => e.id)"
    )
    driver = browser()
    try:
        wait = WebDriverWait(driver, 20, poll_frequency=0.1)

        def visible(selector: str) -> Any:
            return wait.until(shown.visibility_of_element_located((By.CSS_SELECTOR, selector)))

        def snap(name: str) -> None:
            if shots is not None:
                driver.save_screenshot(str(shots / f"{name}.png"))

        def text(anchor: str) -> str:  # what is shown of it (at once: .text is slow)
            return str(
                driver.execute_script(
                    "return document.getElementById(arguments[0]).innerText", anchor
                )
            )

        def rendered(d: Any) -> bool:
            return bool(d.execute_script("return document.getElementById('loading').hidden"))

        driver.get(base_url + "/docs")
        visible("#api-key").send_keys("not-the-key", Keys.ENTER)
        seen["refused"] = wait.until(lambda d: d.find_element(By.ID, "sign-in-error").text or None)
        visible("#api-key").send_keys(KEY, Keys.ENTER)  # the keyboard alone signs in
        wait.until(rendered)
        seen["stored_key"] = driver.execute_script(
            "return [sessionStorage.getItem('ragchat-api-key'), localStorage.length]"
        )
        seen["title"] = driver.find_element(By.CSS_SELECTOR, ".intro h2").text
        seen["rendered"] = driver.execute_script(shown_ids)
        seen["chat"] = text("post-/chat")
        seen["documents"] = text("get-/documents")
        seen["console_page"] = text("get-/")
        seen["unlabelled"] = driver.execute_script(unlabelled)
        snap("reference")

        # a recursive shape (an action's data is any JSON, which holds JSON): its
        # disclosures opened, level by level, end where it holds itself
        def opened(d: Any, anchor: str, words: str) -> bool:
            d.execute_script(
                "document.getElementById(arguments[0]).querySelectorAll('details')"
                ".forEach(d => { d.open = true; })",
                anchor,
            )
            return words in text(anchor)

        wait.until(lambda d: opened(d, "post-/actions", "StorableJSON: as above"))
        seen["actions"] = text("post-/actions")

        search = visible("#filter")
        search.send_keys(FILTER)
        seen["filtered"] = driver.execute_script(shown_ids)
        seen["filter_count"] = driver.find_element(By.ID, "filter-count").text
        search.send_keys(Keys.ESCAPE)  # clears it
        seen["unfiltered"] = len(driver.execute_script(shown_ids))

        # a deep link, loaded afresh in this tab: signed in by the key the tab keeps
        driver.set_window_size(390, 844)  # a phone
        driver.get("about:blank")
        driver.get(base_url + "/docs#post-/chat")
        wait.until(rendered)
        wait.until(lambda d: d.execute_script("return document.activeElement.id") == "post-/chat")
        seen["deep_link"] = driver.execute_script(
            "const box = document.getElementById('post-/chat').getBoundingClientRect();"
            "return [window.scrollY, box.top, window.innerHeight]"
        )
        for _ in range(3):  # its disclosures opened, nested ones too, drawn as they open
            driver.execute_script(
                "document.getElementById('post-/chat').querySelectorAll('details')"
                ".forEach(d => { d.open = true; })"
            )
        seen["opened"] = driver.execute_script(
            "return document.getElementById('post-/chat').querySelectorAll('details[open]').length"
        )
        snap("reference-phone")
        seen["phone_overflow"] = driver.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        # the 401s of signing in (no key, then the wrong one) are the only failures
        signing_in = (
            f"{base_url}/openapi.json - Failed to load resource: the server responded with a "
            "status of 401"
        )
        seen["console_errors"] = browser_errors(driver, signing_in)
    finally:
        driver.quit()
    return seen


async def test_the_reference_shows_every_operation_in_a_browser(api: httpx.AsyncClient):
    document = (await api.get("/openapi.json", headers={"X-API-Key": KEY})).json()
    base_url = str(api.base_url).rstrip("/")
    shots = os.environ.get("RAGCHAT_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
    seen = await trio.to_thread.run_sync(
        read_the_reference, base_url, Path(shots) if shots else None
    )

    every = operations(document)
    assert seen["refused"] == "The key was not accepted; sign in again."
    assert seen["stored_key"] == [KEY, 0]  # the console's place: this tab only
    assert seen["title"] == f"{document['info']['title']} version {document['info']['version']}"
    assert sorted(seen["rendered"]) == sorted(every)  # each operation once, none left out
    chat = seen["chat"]
    assert chat.startswith("POST /chat")
    assert document["paths"]["/chat"]["post"]["summary"] in chat
    assert "Needs the API key, in the header X-API-Key." in chat
    assert "Request body" in chat and "As application/json" in chat
    for field in ("question", "conversation_id"):  # the body's fields, its $ref resolved
        assert f"\n{field} optional" in chat or f"\n{field} required" in chat, field
    assert "200 The answer and its sources" in chat and "422 An RFC 9457 problem" in chat
    assert "limit" in seen["documents"] and "in query" in seen["documents"]
    assert "Open: no API key needed." in seen["console_page"]
    actions = seen["actions"]  # a union's alternatives with their titles; a cycle cut
    assert "Exactly one of these:" in actions and "NewEmailAction" in actions
    assert "StorableJSON: as above (it holds itself)." in actions
    assert seen["unlabelled"] == []

    words = FILTER.split()
    matching = {anchor for anchor, text in every.items() if all(w in text for w in words)}
    assert "post-/widget/sites" in matching and len(matching) < len(every)
    assert set(seen["filtered"]) == matching
    assert seen["filter_count"] == f"{len(matching)} of {len(every)} operations match “{FILTER}”."
    assert seen["unfiltered"] == len(every)

    scrolled, top, height = seen["deep_link"]
    assert scrolled > 0 and 0 <= top < height / 3  # scrolled to it, near the top
    assert seen["opened"] >= 3
    assert seen["phone_overflow"] <= 0
    assert seen["console_errors"] == []  # no script error, no CSP violation
