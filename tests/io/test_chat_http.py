"""POST /documents then POST /chat over real HTTP, on the offline default providers."""

from __future__ import annotations

import httpx
import psycopg

REFUNDS = """# Returns and refunds

Customers can return any item within 30 days of delivery for a full refund.
Refunds are paid to the original payment method within 5 business days.

# Shipping

We ship to the EU and the UK. Standard shipping takes 3 to 5 working days.
"""


async def add(api: httpx.AsyncClient, name: str, text: str) -> dict:
    response = await api.post("/documents", json={"name": name, "text": text})
    assert response.status_code == 201, response.text
    return response.json()


async def test_a_question_about_a_document_is_answered_from_it_with_a_citation(api):
    doc = await add(api, "refunds.md", REFUNDS)
    await add(api, "hours.txt", "The shop opens at 9 am and closes at 6 pm, Monday to Saturday.")

    response = await api.post(
        "/chat", params={"question": "How many days do I have to return an item?"}
    )

    assert response.status_code == 200
    body = response.json()
    assert "30 days" in body["answer"]
    assert "[1]" in body["answer"]
    [citation] = body["citations"]
    assert citation["document_name"] == "refunds.md"
    assert citation["document_id"] == doc["id"]
    assert isinstance(citation["chunk_id"], int)
    assert "30 days" in citation["snippet"]


async def test_the_question_may_come_in_a_json_body(api):
    await add(api, "hours.txt", "The shop opens at 9 am and closes at 6 pm, Monday to Saturday.")
    response = await api.post("/chat", json={"question": "When does the shop open?"})
    assert response.status_code == 200
    assert "9 am" in response.json()["answer"]
    assert response.json()["citations"][0]["document_name"] == "hours.txt"


async def test_with_no_documents_the_answer_says_so_without_citations(api):
    response = await api.post("/chat", params={"question": "What is the refund window?"})
    assert response.status_code == 200
    assert response.json()["citations"] == []
    assert "do not answer" in response.json()["answer"]


async def test_the_same_document_twice_is_stored_once(api, database_url):
    first = await add(api, "refunds.md", REFUNDS)
    again = await api.post("/documents", json={"name": "copy.md", "text": REFUNDS + "\n\n"})
    assert again.status_code == 200
    assert again.json() == {**first, "duplicate": True}
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone() == (1,)


async def test_the_answer_comes_in_the_language_of_the_question(api):
    await add(
        api,
        "rueckgabe.md",
        "# Rückgabe\n\n"
        "Artikel können innerhalb von 30 Tagen nach der Lieferung zurückgegeben werden.",
    )
    response = await api.post(
        "/chat", params={"question": "Wie viele Tage habe ich für die Rückgabe eines Artikels?"}
    )
    body = response.json()
    assert body["language"] == "de"
    assert "innerhalb von 30 Tagen" in body["answer"]

    english = await api.post("/chat", params={"question": "Who is the founder of the company?"})
    assert english.json()["language"] == "en"


async def test_a_short_message_falls_back_to_the_default_language(api):
    response = await api.post("/chat", params={"question": "Rückgabe?"})
    assert response.json()["language"] == "en"


async def test_a_greeting_or_a_thank_you_gets_a_short_reply_in_its_language(api):
    await add(api, "refunds.md", REFUNDS)
    replies = {}
    for said in ("hi", "Hallo?", "Merci beaucoup !", "thanks, bye"):
        response = await api.post("/chat", json={"question": said})
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["citations"], body["provider"], body["usage"]) == ([], None, None)
        replies[said] = (body["answer"], body["language"])
    assert replies == {
        "hi": ("Hello! How can I help you?", "en"),
        "Hallo?": ("Hallo! Wie kann ich Ihnen helfen?", "de"),
        "Merci beaucoup !": ("Avec plaisir ! Puis-je vous aider pour autre chose ?", "fr"),
        "thanks, bye": ("You're welcome! Is there anything else I can help with?", "en"),
    }
    # a turn answered, not a question the documents missed: no gap to close
    gaps = (await api.get("/insights/gaps")).json()
    assert gaps["groups"] == []
    # anything more is a question, answered from the documents
    asked = (await api.post("/chat", json={"question": "Hi, can I return an item?"})).json()
    assert "30 days" in asked["answer"] and asked["citations"]
