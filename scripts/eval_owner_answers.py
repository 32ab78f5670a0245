#!/usr/bin/env python3
"""The owner's answers on the questions the offline service misses (issue 33).

    apt-get install debian-handbook debian-faq     # the corpus (eval/answers/README.md)
    PYTHONPATH=src:. .venv/bin/python scripts/eval_owner_answers.py [--show]

On the corpus and questions of ``scripts/eval_answers.py`` (its cached database, the
local embedder, the extractive answerer, over real HTTP):

1. every question of ``eval/answers/questions.jsonl`` is asked with no owner's answer:
   the misses are those ``eval_answers.py --failures`` lists;
2. the owner's answers of ``eval/owner_answers/answers.jsonl`` (written for half of the
   misses, each covering its question as asked and two phrasings of the owner's; with
   ``--asked-only``, the question as asked alone) are written through ``POST /answers``;
3. the paraphrases of ``eval/owner_answers/paraphrases.jsonl`` (written separately:
   other words for the same need) are asked: **served** is the share answered with the
   right owner's answer as it is (citing it, no provider), **wrong** the share answered
   with another one;
4. every question of the set is asked again: the questions no owner's answer was
   written for must score as they did (**worse** counts those that lost a point: an
   expected page no longer cited, a fact lost, a refusal turned into an answer or back).

The owner's answers are withdrawn at the end (and any left over at the start).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


import eval_answers  # noqa: E402

SET = ROOT / "eval" / "owner_answers"


def read_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def worse(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The points a question lost (a refusal changing either way counts)."""
    lost = [
        k for k in ("cited", "all_cited", "facts", "declined") if before.get(k) and not after.get(k)
    ]
    if before.get("false_refusal") is False and after.get("false_refusal"):
        lost.append("false_refusal")
    return lost


async def ask(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    response = await client.post("/chat", json={"question": question})
    if response.status_code != 200:
        raise SystemExit(f"POST /chat {question!r}: {response.status_code} {response.text}")
    return response.json()


def served_by(body: dict[str, Any]) -> int | None:
    """The owner's answer the answer is, as it is (None: not one)."""
    if body["provider"] is not None:
        return None
    ids = [c.get("owner_answer_id") for c in body["citations"]]
    return ids[0] if len(ids) == 1 else None


def cites_first(body: dict[str, Any], answer_id: int) -> bool:
    """The answer's first citation is the owner's answer (a model, or the offline
    answerer, answered from it as its first source)."""
    return bool(body["citations"]) and body["citations"][0].get("owner_answer_id") == answer_id


async def score_all(client: httpx.AsyncClient, questions: list[dict]) -> dict[str, dict]:
    scores = {}
    for q in questions:
        body = await ask(client, q["question"])
        scores[q["id"]] = eval_answers.score_offline(q, body) | {"served": served_by(body)}
    return scores


def clear_answers(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM owner_answers")


async def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    questions = eval_answers.load_questions(
        eval_answers.EvalSet(eval_answers.DEFAULT_SET).questions, None, None
    )
    by_id = {q["id"]: q for q in questions}
    answers = read_lines(SET / "answers.jsonl")
    paraphrases = read_lines(SET / "paraphrases.jsonl")
    async with eval_answers.served_corpus(Path(args.cache)) as served:
        client = served.client
        await trio.to_thread.run_sync(clear_answers, served.url)
        before = await score_all(client, questions)
        written: dict[str, int] = {}
        for entry in answers:
            asked = [by_id[entry["id"]]["question"]]
            phrasings = [] if args.asked_only else entry.get("questions", [])
            body = {"questions": asked + phrasings, "answer": entry["answer"]}
            response = await client.post("/answers", json=body)
            if response.status_code != 201:
                raise SystemExit(f"POST /answers {entry['id']}: {response.text}")
            written[entry["id"]] = response.json()["id"]
        outcomes = []
        for p in paraphrases:
            reply = await ask(client, p["question"])
            outcomes.append((p, served_by(reply), reply))
        after = await score_all(client, questions)
        await trio.to_thread.run_sync(clear_answers, served.url)

    misses = [q["id"] for q in questions if eval_answers.missed(before[q["id"]])]
    not_missed = sorted(set(written) - set(misses))
    right = [o for o in outcomes if o[1] == written[o[0]["id"]]]
    cited = [o for o in outcomes if o not in right and cites_first(o[2], written[o[0]["id"]])]
    wrong = [o for o in outcomes if o[1] is not None and o[1] != written[o[0]["id"]]]
    others = [q["id"] for q in questions if q["id"] not in written]
    lost = {qid: worse(before[qid], after[qid]) for qid in others}
    lost = {qid: points for qid, points in lost.items() if points}
    stray = [qid for qid in others if after[qid]["served"] is not None]
    print(f"{len(questions)} questions, {len(misses)} missed offline: {' '.join(misses)}")
    print(f"owner's answers written for {len(written)} of them", end="")
    print(f" (not misses: {' '.join(not_missed)})" if not_missed else "")
    share = {
        name: 100 * len(found) / len(outcomes)
        for name, found in (("right", right), ("wrong", wrong))
    }
    print(
        f"paraphrases asked {len(outcomes):3d}   served the right answer "
        f"{share['right']:5.1f}%   a wrong one {share['wrong']:5.1f}%"
    )
    print(
        f"                  answered citing it first (not served) "
        f"{100 * len(cited) / len(outcomes):5.1f}%   so answered from it "
        f"{100 * (len(right) + len(cited)) / len(outcomes):5.1f}%"
    )
    print(
        f"other questions   {len(others):3d}   worse {len(lost)}   "
        f"served an owner's answer {len(stray)}"
    )
    for qid, points in lost.items():
        print(f"  worse: {qid} lost {', '.join(points)}")
    if args.show:
        for p, found, body in outcomes:
            if found != written[p["id"]]:
                print(f"  not served: {p['id']} {p['question']!r} -> {body['answer'][:120]!r}")
    print(f"{time.perf_counter() - started:.0f} s in all")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        default=str(ROOT / "data" / "answers-cache"),
        help="eval_answers.py's folder for the embedded database (default %(default)s)",
    )
    parser.add_argument("--show", action="store_true", help="list the paraphrases not served")
    parser.add_argument(
        "--asked-only",
        action="store_true",
        help="each owner's answer covers its question as asked, without the owner's phrasings",
    )
    raise SystemExit(trio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()
