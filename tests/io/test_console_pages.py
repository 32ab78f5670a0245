"""The console an owner lives in (issue 36), in a real browser against the real app with
a model (the fake OpenAI server, writing word by word): a three-turn chat streamed, with
a follow-up, kept across a reload; the documents and the conversations paged past their
first page (and found by text); a data source created and tested, a live-data action
created and dry-run, a workflow test-called; the status page with the model configured;
and every page at desktop and phone width, measured for horizontal overflow.

With RAGCHAT_SCREENSHOTS=<folder>, each page is saved there at both widths
(docs/console/ holds the ones the docs show: ``<page>.png`` and ``<page>-phone.png``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from ragcore.chat.pipeline import ChatAnswer
from ragcore.voice.call import TurnFinished
from ragio.chat.conversations import finish_turn
from ragio.service import Service
from ragio.voice.calls import begin_call
from tests.io.conftest import on_openai
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.test_console import browser, browser_errors

KEY = "console-key-0123"
#: cites its second source first: the console numbers them 1, 2 as the text cites them
REPLY = "The shop opens at 9 am [2] and delivers within 10 km [1]."
FAQ = (
    "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm, Monday to Saturday.\n\n"
    "# Delivery\n\nWe deliver within 10 km of the shop, for free.\n"
)
CUSTOMERS = "email,name,plan\nada@example.com,Ada,pro\nbob@example.com,Bob,free\n"
DOCUMENTS = 24  # and the FAQ: 25, past the first page of 20
CONVERSATIONS = 21  # and a call's, and the chat's own: 23, past the first page of 20
PAGES = [
    ("chat", "#chat-form"),
    ("inbox", "#inbox-list"),
    ("conversations", "#conversation-list table"),
    ("gaps", "#gap-list"),
    ("documents", "#document-list table"),
    ("websites", "#website-list"),
    ("integrations", "#source-list table"),
    ("workflows", "#workflow-list table"),
    ("approvals", "#action-log"),
    ("roles", "#profile-form"),
    ("sites", "#site-list"),
    ("calls", "#call-list"),
    ("usage", "svg.chart"),
    ("keys", "#key-list table"),
    ("status", "#status-items"),
]


async def a_call_answered(service: Service) -> None:
    """A call with one answered question, recorded as the voice server records it."""
    caller, now = "+15551234567", datetime.now(UTC)
    times = {"speech_ended": 10.0, "transcribed": 10.25, "first_text": 10.86}
    times |= {"first_sentence": 11.0, "first_audio": 11.2, "first_frame": 11.21, "answered": 12.5}
    answer = ChatAnswer("At 9 am.", (), "support", "openai", "gpt-test", language="en")
    said = TurnFinished(1, "When do you open?", answer.answer, "answered", answer, times)
    await service.database.run(begin_call, "CA-console", "MZ-console", caller, None, now)
    kept = said.in_conversation("CA-console", caller)
    await service.database.run(finish_turn, kept, said.stages, now, 90)


@pytest.fixture
async def model(serve_fake) -> FakeOpenAI:
    fake = FakeOpenAI(api_key="sk-console-model", reply=REPLY)
    fake.word_delay = 0.08  # a model's writing pace: the words arrive one by one
    return await serve_fake(fake)


@pytest.fixture
def settings_overrides(model: FakeOpenAI) -> dict[str, Any]:
    return on_openai(
        model,
        service_api_key=KEY,
        usage_ledger="true",
        addon_encryption_key="Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
        workflow_allow_private_targets="true",
    )


def live_in_the_console(
    base_url: str, folder: Path, hook: str, shots: Path | None
) -> dict[str, Any]:
    """The owner's day in the console; what the owner saw."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as shown
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait

    seen: dict[str, Any] = {}
    driver = browser()
    try:
        # a list drawn again while it is read: read again
        wait = WebDriverWait(driver, 20, ignored_exceptions=(StaleElementReferenceException,))

        def visible(selector: str) -> Any:
            return wait.until(shown.visibility_of_element_located((By.CSS_SELECTOR, selector)))

        def text(selector: str) -> str:
            return str(driver.find_element(By.CSS_SELECTOR, selector).text)

        def shows(selector: str, words: str) -> str:
            try:
                wait.until(lambda d: words in d.find_element(By.CSS_SELECTOR, selector).text)
            except TimeoutException:
                page_text = driver.find_element(By.ID, "page").text
                raise AssertionError(f"{selector} never showed {words!r}: {page_text!r}") from None
            return text(selector)

        def click(selector: str) -> None:  # clear of the status line at the bottom
            button = visible(selector)
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
            button.click()

        def page(name: str, ready: str) -> None:
            driver.get(f"{base_url}/#{name}")
            visible(ready)

        def turns() -> list[str]:
            return list(
                driver.execute_script(
                    "return [...document.querySelectorAll('#chat-log .turn')].map(t => t.innerText)"
                )
            )

        driver.get(base_url + "/")
        visible("#api-key").send_keys(KEY, Keys.ENTER)
        visible("#chat-form")

        # ------------------------------------------------ three turns, streamed
        driver.execute_script(
            """window.partial = [];
            new MutationObserver(() => {
              const last = document.querySelector('#chat-log .turn:last-child');
              if (last && !last.querySelector('.answered-by')) {
                const words = last.querySelector('.answer');
                if (words && words.textContent) window.partial.push(words.textContent);
              }
            }).observe(document.getElementById('chat-log'),
                       {subtree: true, childList: true, characterData: true});"""
        )
        questions = [
            "When does the shop open?",
            "And does it deliver?",  # a follow-up
            "How far do you deliver?",
        ]
        for number, question in enumerate(questions, 1):
            box = visible("#question")
            if number == 2:  # Shift+Enter is a new line, Enter sends
                box.send_keys("And", Keys.SHIFT, Keys.ENTER, Keys.SHIFT, "does it deliver?")
                seen["two_lines"] = box.get_attribute("value")
                box.clear()
            box.send_keys(question, Keys.ENTER)
            wait.until(
                lambda d, n=number: len(d.find_elements(By.CSS_SELECTOR, ".answered-by")) == n
            )
        seen["partial"] = driver.execute_script("return window.partial")
        seen["turns"] = turns()
        seen["thread"] = text("#thread")
        seen["sources"] = [
            li.get_attribute("value")
            for li in driver.find_elements(
                By.CSS_SELECTOR, "#chat-log .turn:last-child .sources li"
            )
        ]
        seen["question_box"] = driver.find_element(By.ID, "question").get_attribute("value")
        driver.refresh()  # the conversation of this tab is shown again
        wait.until(lambda d: len(turns()) == 3)
        seen["after_reload"] = turns()

        # ------------------------------------------------ the documents, a page at a time
        page("documents", "#document-pages")
        seen["documents_1"] = text("#document-list")
        click("#document-pages button:last-child")  # Next
        shows("#document-pages", "21–25")
        seen["documents_2"] = text("#document-list")
        click("#document-pages button:nth-of-type(1)")  # Previous
        shows("#document-pages", "1–20")

        # ------------------------------------------------ the conversations, paged and found
        page("conversations", "#conversation-pages")
        seen["conversations_1"] = text("#conversation-list")
        click("#conversation-pages button:last-child")
        shows("#conversation-pages", "21–23")
        seen["conversations_2"] = text("#conversation-list")
        visible("#conversation-q").send_keys("number 7", Keys.ENTER)
        shows("#conversation-pages", "of 1")
        seen["found"] = text("#conversation-list")

        # ------------------------------------------------ a data source and a live action
        page("integrations", "#source-form")
        visible("#source-name").send_keys("Customers")
        Select(driver.find_element(By.ID, "source-kind")).select_by_value("csv")
        customers = folder / "customers.csv"
        customers.write_text(CUSTOMERS)
        visible("#source-file").send_keys(str(customers))
        click("#source-form button[type=submit]")
        shows("#source-list", "Customers")
        click("#source-list button[aria-label='Test Customers']")
        seen["tested"] = shows("#integration-outcome", "works")
        click("#source-list button[aria-label='Sync Customers']")
        seen["synced"] = shows("#integration-outcome", "Customers: synced")
        click("#source-list button[aria-label='Edit Customers']")
        visible("#source-edit-interval").send_keys("60")
        click("#source-edit-form button[type=submit]")
        seen["edited"] = shows("#source-list", "every 60 min")
        visible("#action-name").send_keys("Plan")
        visible("#action-template").send_keys("email = {email}")
        visible("#action-triggers").send_keys("my plan")
        click("#action-form button[type=submit]")
        shows("#action-list", "Plan")
        visible(".dry-run-message").send_keys("my plan? ada@example.com")
        click(".dry-run button[type=submit]")
        seen["dry_run"] = shows(".dry-run-result", "row")

        # ------------------------------------------------ a workflow, test-called
        page("workflows", "#workflow-form")
        visible("#workflow-name").send_keys("Follow-up")
        visible("#workflow-url").send_keys(hook)
        click("#workflow-form button[type=submit]")
        shows("#workflow-list", "Follow-up")
        click("#workflow-list button[aria-label='Test workflow Follow-up']")
        seen["workflow_tested"] = shows("#workflow-outcome", "works")

        # ------------------------------------------------ a website as a source
        page("websites", "#website-form")
        visible("#website-name").send_keys("Shop site")
        visible("#website-start-urls").send_keys("https://shop.example.com/")
        click("#website-form button[type=submit]")
        seen["website"] = shows("#website-list", "never crawled")

        page("status", "#status-items")
        seen["status"] = text("#status-items")

        # ------------------------------------------------ a key made, shown once, revoked
        page("keys", "#key-form")
        visible("#key-name").send_keys("Website backend")
        click("#key-scope-read")
        click("#key-form button[type=submit]")
        seen["key_made"] = visible("#key-made").text
        seen["key_listed"] = shows("#key-list", "Website backend")
        click("#key-list button[aria-label='Revoke key Website backend']")
        wait.until(shown.alert_is_present()).accept()
        seen["key_revoked"] = shows("#key-list", "revoked")

        # ------------------------------------------------ every page, desktop and phone
        for width, suffix in ((1280, ""), (390, "-phone")):
            driver.set_window_size(width, 900 if width > 400 else 844)
            for name, ready in PAGES:
                page(name, ready)
                driver.execute_script("document.getElementById('status').textContent = ''")
                if shots is not None:
                    driver.save_screenshot(str(shots / f"{name}{suffix}.png"))
                if name == "calls" and not suffix:
                    seen["calls"] = text("#call-list")
                overflow = driver.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth"
                )
                seen.setdefault("overflow", {})[f"{name}{suffix}"] = overflow
        seen["header_phone"] = driver.execute_script(
            "return document.querySelector('header').getBoundingClientRect().height"
        )
        click("#menu-toggle")  # the pages' menu, folded on a phone
        visible("nav a[href='#documents']").click()
        visible("#document-list")
        seen["menu_after_choice"] = driver.find_element(By.ID, "nav").is_displayed()
        page("chat", "#chat-log .turn")
        click("#new-conversation")
        seen["new_thread"] = text("#thread")
        seen["cleared"] = turns()
        seen["console_errors"] = browser_errors(driver, f"{base_url}/usage - Failed")
    finally:
        driver.quit()
    return seen


async def test_the_owner_chats_pages_sets_up_and_checks_status_in_a_browser(
    api: httpx.AsyncClient, model: FakeOpenAI, receiver: Any, service: Service, tmp_path: Path
):
    keyed = {"X-API-Key": KEY}
    await a_call_answered(service)
    added = await api.post("/documents", json={"name": "shop.md", "text": FAQ}, headers=keyed)
    assert added.status_code == 201, added.text
    for number in range(1, DOCUMENTS + 1):
        note = f"# Note {number}\n\nThe shop's note number {number} is about item {number}.\n"
        stored = await api.post(
            "/documents", json={"name": f"note-{number:02}.md", "text": note}, headers=keyed
        )
        assert stored.status_code == 201, stored.text
    for number in range(1, CONVERSATIONS + 1):
        asked = await api.post(
            "/chat", json={"question": f"Question number {number} about the shop?"}, headers=keyed
        )
        assert asked.status_code == 200, asked.text
    shots = os.environ.get("RAGCHAT_SCREENSHOTS")
    folder = Path(shots) if shots else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    base_url = str(api.base_url).rstrip("/")
    seen = await trio.to_thread.run_sync(
        live_in_the_console, base_url, tmp_path, receiver.url("/hook"), folder
    )

    # the chat: streamed word by word, three turns in one conversation, sources 1..n
    final = "The shop opens at 9 am [1] and delivers within 10 km [2]."
    partial = [words for words in seen["partial"] if words and len(words) < len(REPLY)]
    assert partial, seen["partial"]  # words were shown before the answer was whole
    assert len(seen["turns"]) == 3
    assert all(final in turn for turn in seen["turns"])
    assert seen["turns"][1].split()[:5] == ["You", "And", "does", "it", "deliver?"]
    assert seen["two_lines"] == "And\ndoes it deliver?"
    assert seen["sources"] == ["1", "2"]
    assert seen["question_box"] == ""
    assert "with OpenAI" in seen["turns"][0]
    assert "3 turns" in seen["thread"]
    assert seen["after_reload"] == seen["turns"]
    assert seen["new_thread"].startswith("A new conversation") and seen["cleared"] == []
    conversations = (await api.get("/conversations?limit=1", headers=keyed)).json()
    [chat] = conversations["conversations"]
    assert chat["turn_count"] == 3 and chat["first_question"] == "When does the shop open?"
    # a call's turn by component: the transcript, the model's first words, the speech's
    # first byte, end to end
    assert (
        "answered · transcript 250 ms · first token 610 ms · speech's first byte 200 ms"
        " · voice to voice 1,210 ms"
    ) in seen["calls"], seen["calls"]

    # the lists: every item reachable, the total said
    assert "Showing 1–20 of 25" in seen["documents_1"]
    assert f"note-{DOCUMENTS:02}.md" in seen["documents_1"]  # the newest first
    assert "shop.md" not in seen["documents_1"] and "shop.md" in seen["documents_2"]
    assert "Showing 1–20 of 23" in seen["conversations_1"]
    assert "When does the shop open?" in seen["conversations_1"]  # its first question
    assert "Question number 1 about" in seen["conversations_2"]
    assert "Showing 1–1 of 1" in seen["found"] and "Question number 7" in seen["found"]

    # set-up: tested, dry-run, test-called
    assert "Customers: works: CSV file: 2 rows" in seen["tested"]
    assert "2 stored, 0 skipped, 0 removed" in seen["synced"]
    assert "Customers" in seen["edited"]
    assert "1 row" in seen["dry_run"] and "pro" in seen["dry_run"]
    assert "ada@example.com" in seen["dry_run"]
    assert "Follow-up works: the workflow answered HTTP 200" in seen["workflow_tested"]
    assert len(receiver.requests) == 1 and receiver.requests[0].body["context"]["test"] is True
    assert "Shop site" in seen["website"]
    made = seen["key_made"]  # shown once, in full; listed by its first characters only
    assert made.startswith("rck_") and len(made) == 47
    assert made not in seen["key_listed"] and made[:10] in seen["key_listed"]
    assert "read, chat" in seen["key_listed"]
    assert "Revoke" not in seen["key_revoked"]

    assert "sk-console-model" not in seen["status"]
    assert "Answering: Working" in seen["status"] and "openai" in seen["status"]

    assert {page: px for page, px in seen["overflow"].items() if px > 0} == {}
    assert seen["header_phone"] <= 64  # one line: the menu folds away
    assert not seen["menu_after_choice"]
    assert seen["console_errors"] == []
