#!/usr/bin/env python3
"""Does a page's text, as an extractor reads it, still hold the facts questions ask for?

    .venv/bin/pip install trafilatura   # only for this comparison; not a dependency
    .venv/bin/python scripts/eval_extraction.py

For every question of the evaluation sets under eval/ (answers, answers-apache,
answers-gnucash) with expected pages and facts, reads each expected HTML page two ways:

- ``ours``: the service's HTML reader (``ragcore.knowledge.formats.html_text``: every
  block, ``nav`` and scripts left out), which uploads and website crawls use;
- ``trafilatura``: its main-content extraction (HTML output, tables kept, recall
  favoured), then the same reader over what it kept.

and counts the questions whose expected facts are all in the text, and the seconds spent.
It chose the crawler's reader: a main-content extractor that drops a fact drops it for
good, whatever retrieval does after.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src")]

from ragcore.knowledge.formats import decode_text, html_text  # noqa: E402

SETS = ("answers", "answers-apache", "answers-gnucash")


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).lower()


def trafilatura_text(data: bytes) -> str:
    import trafilatura

    kept = trafilatura.extract(
        data, output_format="html", include_tables=True, include_formatting=True,
        favor_recall=True,
    )  # fmt: skip
    return html_text(kept or "")


def holds(text: str, facts: list[str | list[str]]) -> bool:
    body = normal(text)
    return all(
        any(normal(alt) in body for alt in (fact if isinstance(fact, list) else [fact]))
        for fact in facts
    )


def main() -> None:
    readers = {"ours": lambda data: html_text(decode_text(data)), "trafilatura": trafilatura_text}
    for name in SETS:
        folder = ROOT / "eval" / name
        corpus = json.loads((folder / "corpus.json").read_text())
        roots = {key: Path(spec["folder"]) for key, spec in corpus["folders"].items()}
        held = dict.fromkeys(readers, 0)
        seconds = dict.fromkeys(readers, 0.0)
        asked = 0
        for line in (folder / "questions.jsonl").read_text().splitlines():
            question = json.loads(line)
            if not question.get("expected_facts") or not question.get("expected_pages"):
                continue
            pages = []
            for page in question["expected_pages"]:
                key, rest = page.split("/", 1)
                path = roots[key] / rest
                if path.suffix in (".html", ".htm") and path.exists():
                    pages.append(path.read_bytes())
            if not pages:
                continue
            asked += 1
            for label, read in readers.items():
                started = time.perf_counter()
                text = "\n".join(read(data) for data in pages)
                seconds[label] += time.perf_counter() - started
                held[label] += holds(text, question["expected_facts"])
        shown = ", ".join(
            f"{label} {held[label]}/{asked} ({seconds[label]:.2f} s)" for label in readers
        )
        print(f"{name}: questions whose facts the expected pages' text holds: {shown}")


if __name__ == "__main__":
    main()
