"""The chat widget in a real browser (Debian's chromium driven by Selenium, as
tests/io/test_console.py does), embedded by its one script tag in a page of ANOTHER
origin that sends a strict Content-Security-Policy. The visitor opens the launcher,
asks, sees the answer stream in and its citation, reloads and sees the conversation
again, asks a follow-up in the same conversation and gives a thumbs-down the owner sees;
a person of the business then writes in the conversation and the visitor sees it at
once; the same page on an origin the site does not allow gets no session.

The host page is served on 127.0.0.1 (an allowed origin) and, the same server, as
``localhost`` (another origin, not allowed): http on loopback is an origin a site may
allow (docs/widget.md)."""

from __future__ import annotations

import gzip
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.io.conftest import on_openai, serve_app
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_console import browser

KEY = "widget-key-0123"
OWNER = {"X-API-Key": KEY}
RETURNS = "# Returns\n\nItems can be returned within 30 days of delivery for a full refund.\n"
REPLY = "You can return an item within 30 days of delivery and get a full refund [1]."
PERSON = "Hello, this is Anna from the shop: I can help with a gift."
COLOUR = "#0f766e"  # the site's accent: rgb(15, 118, 110)
WIDGET = Path(__file__).parents[2] / "src" / "ragio" / "console" / "widget.js"
SHADOW = "return document.querySelector('ragchat-widget').shadowRoot"
GERMAN_DOWN = (
    "Der Assistent ist gerade nicht erreichbar, bitte versuchen Sie es später noch einmal."
)


@pytest.fixture
async def model(serve_fake) -> FakeOpenAI:
    fake = await serve_fake(FakeOpenAI(api_key="sk-test", reply=REPLY))
    fake.word_delay = 0.12  # a model's writing pace: the answer takes about 1.5 s
    return fake


@pytest.fixture
def settings_overrides(model: FakeOpenAI) -> dict[str, Any]:
    return on_openai(model, service_api_key=KEY)


class HostPage:
    """The owner's website: one page with the widget's script tag and a strict policy
    that allows scripts and connections to the service only, no inline style."""

    def __init__(self) -> None:
        self.service = ""
        self.site = ""

    def page(self) -> bytes:
        return (
            '<!doctype html><html lang="de"><head><meta charset="utf-8"><title>Shop</title>'
            "</head><body><h1>The shop</h1><p>Welcome.</p>"
            f'<script src="{self.service}/widget.js" data-site="{self.site}" async></script>'
            "</body></html>"
        ).encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": message["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] != "/":  # the favicon: nothing, and no 404 in the console
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        policy = (
            f"default-src 'none'; script-src {self.service}; connect-src {self.service}; "
            "style-src 'self'"
        )
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-security-policy", policy.encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.page()})


def visit(
    allowed_url: str,
    refused_url: str,
    service_url: str,
    site: int,
    person_writes: Callable[[], None],
) -> dict[str, Any]:
    """The visitor's path on the owner's page, then the page on an origin not allowed."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    seen: dict[str, Any] = {}
    driver = browser()
    try:
        wait = WebDriverWait(driver, 20)

        def inside(selector: str) -> Any:
            return driver.execute_script(f"{SHADOW}.querySelector(arguments[0])", selector)

        def shown(selector: str) -> Any:
            return wait.until(lambda d: inside(selector))

        def focused() -> str:
            return driver.execute_script(
                f"const e = {SHADOW.removeprefix('return ')}.activeElement;"
                "return e ? (e.id || e.className) : ''"
            )

        def ask(question: str, turn: int) -> list[str]:
            """Ask; the answer's text as sampled while it streamed in."""
            shown("#i").send_keys(question, Keys.ENTER)
            samples: list[str] = []
            answered = f"li.a[data-turn='{turn}']"
            deadline = time.monotonic() + 20
            while inside(answered) is None and time.monotonic() < deadline:
                text = driver.execute_script(
                    f"const a = [...{SHADOW.removeprefix('return ')}.querySelectorAll('li.a')]"
                    ".pop(); return a ? a.querySelector('.x').textContent : ''"
                )
                if text not in ("", "…") and (not samples or samples[-1] != text):
                    samples.append(text)
                time.sleep(0.03)
            shown(answered)
            return samples

        driver.get(allowed_url)
        launcher = shown(".launcher")
        wait.until(lambda d: launcher.value_of_css_property("background-color").startswith(
            "rgba(15, 118, 110"
        ))  # fmt: skip
        seen["launcher"] = {
            name: launcher.get_attribute(name) for name in ("aria-label", "aria-expanded")
        }
        seen["left"] = "left" in inside(".w").get_attribute("class")
        launcher.click()
        seen["opened"] = launcher.get_attribute("aria-expanded")
        seen["dialog"] = {
            name: inside(".panel").get_attribute(name) for name in ("role", "aria-label")
        }
        seen["focus_on_open"] = focused()
        seen["greeting"] = shown("li.g").text
        seen["live"] = inside("ol.m").get_attribute("aria-live")
        seen["unlabelled"] = driver.execute_script(
            f"return [...{SHADOW.removeprefix('return ')}.querySelectorAll('input')]"
            ".filter(e => !e.labels || !e.labels.length).length"
        )
        seen["streamed"] = ask("How long do I have to return an item?", 1)
        seen["answer"] = inside("li.a[data-turn='1'] .x").text
        seen["citation"] = inside("li.a[data-turn='1'] ol.c li").text
        inside("#i").send_keys(Keys.ESCAPE)
        seen["closed"] = (inside(".panel").get_attribute("hidden"), focused())

        driver.refresh()  # the conversation is shown again, and goes on
        shown(".launcher").click()
        seen["after_reload"] = shown("li.a[data-turn='1'] .x").text
        ask("And do I get all my money back?", 2)
        down = shown("li.a[data-turn='2'] button[data-rating='down']")
        seen["thumb_label"] = down.get_attribute("aria-label")
        down.click()
        wait.until(
            lambda d: d.execute_script(
                "return performance.getEntriesByType('resource')"
                ".some(e => e.name.endsWith('/widget/feedback'))"
            )
        )
        seen["pressed"] = down.get_attribute("aria-pressed")
        why = shown("li.a[data-turn='2'] form.y input")  # what was wrong, in the visitor's words
        seen["why_label"] = why.get_attribute("aria-label")
        why.send_keys("It did not say how long the refund takes", Keys.ENTER)
        seen["thanks"] = shown("li.a[data-turn='2'] p.y").text

        person_writes()  # a person of the business writes in the conversation: shown live
        seen["person"] = shown("li.p[data-turn='3'] .x").text
        seen["person_by"] = inside("li.p b").text
        shown("#i").send_keys("Danke, es ist ein Geschenk.", Keys.ENTER)  # for the person
        seen["held"] = shown("li.s").text
        seen["answers"] = driver.execute_script(f"{SHADOW}.querySelectorAll('li.a').length")

        driver.set_window_size(390, 844)  # a phone: the open panel fills the screen
        seen["phone"] = driver.execute_script(
            f"const r = {SHADOW.removeprefix('return ')}.querySelector('.panel')"
            ".getBoundingClientRect(); return [r.width - innerWidth, r.height - innerHeight]"
        )
        seen["console_errors"] = [
            entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
        ]
        # what the owner sees now; then the owner revokes the visitors' tokens: the next
        # question gets a new session (a new visitor) once and is answered
        listed = httpx.get(f"{service_url}/conversations", params={"channel": "web"}, headers=OWNER)
        seen["listed"] = (listed.status_code, listed.json())
        revoked = httpx.post(f"{service_url}/widget/sites/{site}/revoke-sessions", headers=OWNER)
        assert revoked.status_code == 204, revoked.text
        driver.set_window_size(1280, 900)
        shown("#i").send_keys("Can I return a gift?", Keys.ENTER)
        wait.until(lambda d: len(d.execute_script(
            f"{SHADOW}.querySelectorAll('li.a[data-turn], li.e')"
        )) == 3)  # fmt: skip
        seen["after_revoke"] = driver.execute_script(
            f"const e = [...{SHADOW.removeprefix('return ')}"
            ".querySelectorAll('li.a[data-turn], li.e')].pop();"
            "return [e.className, e.dataset.turn, e.querySelector('.x').textContent]"
        )
        driver.get_log("browser")  # the refused token read: a 401 without CORS headers

        driver.get(refused_url)  # the same page, on an origin the site does not allow
        shown(".launcher").click()
        seen["refused"] = shown("li.e").text
        seen["refused_log"] = [entry["message"] for entry in driver.get_log("browser")]
    finally:
        driver.quit()
    return seen


async def test_a_visitor_chats_through_the_widget_on_a_strict_page_of_another_origin(
    api: httpx.AsyncClient, nursery: trio.Nursery
):
    stored = await api.post(
        "/documents", json={"name": "returns.md", "text": RETURNS}, headers=OWNER
    )
    assert stored.status_code == 201, stored.text
    host = HostPage()
    host.service = str(api.base_url).rstrip("/")
    address, stop = await serve_app(host, nursery)
    port = address.rsplit(":", 1)[1]
    allowed, refused = f"http://127.0.0.1:{port}", f"http://localhost:{port}"
    created = await api.post(
        "/widget/sites",
        json={"name": "shop", "allowed_origins": [allowed], "colour": COLOUR, "position": "left"},
        headers=OWNER,
    )
    assert created.status_code == 201, created.text
    host.site = created.json()["public_id"]

    site = created.json()["id"]

    def person_writes() -> None:
        listed = httpx.get(f"{host.service}/conversations", headers=OWNER).json()
        conversation = listed["conversations"][0]["id"]
        url = f"{host.service}/conversations/{conversation}/messages"
        wrote = httpx.post(url, json={"text": PERSON}, headers=OWNER)
        assert wrote.status_code == 201, wrote.text

    seen = await trio.to_thread.run_sync(
        visit, allowed + "/", refused + "/", host.service, site, person_writes
    )
    stop.set()

    # the launcher and the dialog, in the page's language (<html lang="de">)
    assert seen["launcher"] == {"aria-label": "Chat öffnen", "aria-expanded": "false"}
    assert seen["left"] is True
    assert seen["opened"] == "true"
    assert seen["dialog"] == {"role": "dialog", "aria-label": "Chat: shop"}
    assert seen["focus_on_open"] == "i"  # the question's input
    assert seen["greeting"] == "Hallo! Wie kann ich Ihnen heute helfen?"  # none set: built in
    assert seen["live"] == "polite"
    assert seen["unlabelled"] == 0
    # the answer grew word by word before it was done, then was the final one
    grew = seen["streamed"]
    assert len(grew) >= 3, grew
    assert all(len(b) > len(a) and b.startswith(a) for a, b in itertools.pairwise(grew)), grew
    assert seen["answer"] == REPLY
    assert seen["citation"] == "returns.md"
    assert seen["closed"] == ("true", "launcher")  # Escape closed it, focus back
    assert seen["after_reload"] == REPLY
    assert (seen["person"], seen["person_by"]) == (PERSON, "shop")  # live, as the shop's
    # the next message waits for the person: no assistant's answer, a word that it was sent
    assert seen["held"] == "Gesendet: eine Person antwortet Ihnen hier."
    assert seen["answers"] == 2
    assert seen["phone"] == [0, 0]

    # one conversation on channel web, the follow-up in it
    status, listed = seen["listed"]
    assert status == 200, listed
    assert len(listed["conversations"]) == 1
    conversation = listed["conversations"][0]["id"]
    owner = (await api.get(f"/conversations/{conversation}", headers=OWNER)).json()
    assert [(t["turn"], t["author"]) for t in owner["turns"]] == [
        (1, "ai"),
        (2, "ai"),
        (3, "person"),
        (4, "customer"),
    ]
    # tokens revoked: the widget got a new session once and asked again (a new visitor)
    assert seen["after_revoke"] == ["a", "1", REPLY]
    now = (await api.get("/conversations", params={"channel": "web"}, headers=OWNER)).json()
    assert len(now["conversations"]) == 2

    # an origin not allowed: refused (403, no CORS), the widget says so kindly
    assert seen["refused"] == GERMAN_DOWN
    assert any("/widget/sessions" in m and "CORS" in m for m in seen["refused_log"])
    answered = await api.post(
        "/widget/sessions", json={"site": host.site}, headers={"Origin": refused}
    )
    assert answered.status_code == 403
    assert "access-control-allow-origin" not in answered.headers

    # the thumbs-down, stored and seen by the owner (needs conversations.set_feedback)
    assert seen["thumb_label"] == "Nicht hilfreich"
    assert seen["pressed"] == "true"
    assert owner["turns"][1]["feedback"] == "down"
    assert seen["why_label"] == "Was war falsch? (optional)" and seen["thanks"] == "Danke!"
    assert owner["turns"][1]["feedback_comment"] == "It did not say how long the refund takes"
    assert seen["console_errors"] == []  # no script error, no CSP violation


def test_the_widget_stays_small():
    """At most 15 KB gzipped: it loads on every page of the owner's website."""
    assert len(gzip.compress(WIDGET.read_bytes(), compresslevel=9)) <= 15 * 1024
