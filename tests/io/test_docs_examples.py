"""The answers the docs show are the answers the service gives: the README's quick start
is run against the real service and its answer compared whole with the README's; the
/chat and /chat/stream examples of docs/api.md are that same answer. The scores the
docs state follow the fusion constant (``RRF_K``)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from ragcore.knowledge.retrieval import RRF_K
from tests.io.test_docs_lists import ROOT, _doc, _section

#: a chunk both rankings put first (the examples search a knowledge base of one document)
BEST_SCORE = 2 / (RRF_K + 1)


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(text: str, language: str) -> list[str]:
    """The text of each fenced block of ``language`` ("": none named), in order."""
    blocks, fence, lines = [], None, []
    for line in text.splitlines(keepends=True):
        if not line.startswith("```"):
            lines.append(line)
        elif fence is None:
            fence, lines = line[3:].strip(), []
        else:
            if fence == language:
                blocks.append("".join(lines))
            fence = None
    return blocks


def _quick_start() -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The README quick start's document (the JSON body it posts), its question and the
    answer the README shows."""
    text = _section(_readme(), "## Quick start")
    [commands] = [b for b in _blocks(text, "sh") if "/documents" in b and "/chat" in b]
    [body] = re.findall(r"/documents .*?-d '(\{.*?\})'", commands, re.DOTALL)
    [url] = re.findall(r"'(127\.0\.0\.1:8000/chat\?[^']*)'", commands)
    [question] = parse_qs(urlsplit("http://" + url).query)["question"]
    [shown] = _blocks(text.split("The answer quotes the document and cites it:", 1)[1], "json")[:1]
    return json.loads(body), question, json.loads(shown)


async def _asked(api: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    document, question, _ = _quick_start()
    stored = await api.post("/documents", json=document)
    assert stored.status_code == 201, stored.text
    answered = await api.post("/chat", params={"question": question})
    assert answered.status_code == 200, answered.text
    return question, answered.json()


async def test_the_readme_quick_start_answers_as_the_readme_shows(api):
    _, _, shown = _quick_start()
    _, answer = await _asked(api)
    assert shown == answer, (
        f"README.md's answer is out of date; the service's: {json.dumps(answer)}"
    )


async def test_the_chat_examples_in_api_md_are_the_answer_the_service_gives(api):
    """The /chat example and the /chat/stream ``done`` event: the same answer, field for
    field (the conversation's id aside: the example's conversation is not the first)."""
    question, answer = await _asked(api)
    text = _doc("api.md")
    [chat] = _blocks(_section(text, "## POST /chat"), "json")[:1]
    shown = json.loads(chat)
    assert shown == {**answer, "conversation_id": shown["conversation_id"]}

    async with api.stream("POST", "/chat/stream", params={"question": question}) as streamed:
        events = (await streamed.aread()).decode()
    [done] = re.findall(r"^event: done\ndata: (.*)$", events, re.MULTILINE)
    [stream_block] = [b for b in _blocks(_section(text, "## POST /chat/stream"), "") if "done" in b]
    [shown_done] = re.findall(r"^event: done\ndata: (.*)$", stream_block, re.MULTILINE)
    real, shown = json.loads(done), json.loads(shown_done)
    assert shown == {**real, "conversation_id": shown["conversation_id"]}


def test_the_scores_the_docs_state_follow_the_fusion_constant():
    """api.md's "at most 2/N ≈ x" is 2 / (RRF_K + 1), and every score an example shows is
    that best one (at the precision it is shown with)."""
    text = _doc("api.md")
    [(denominator, approximately)] = re.findall(r"at most 2/(\d+) ≈ (0\.\d+)", text)
    assert int(denominator) == RRF_K + 1
    assert approximately == f"{BEST_SCORE:.4f}"
    # the knowledge graph's list weighs GRAPH_WEIGHT: at most GRAPH_WEIGHT / (RRF_K + 1)
    assert {int(n) for n in re.findall(r"`GRAPH_WEIGHT`/(\d+)", text)} == {RRF_K + 1}
    for name, doc in (("README.md", _readme()), ("api.md", text)):
        for shown in re.findall(r'"score": ([0-9.]+)', doc):
            digits = len(shown.split(".")[1])
            assert shown == str(round(BEST_SCORE, digits)) or float(shown) == BEST_SCORE, (
                f"{name} shows a score of {shown}: with RRF_K = {RRF_K}, a chunk both "
                f"rankings put first scores {BEST_SCORE}"
            )
