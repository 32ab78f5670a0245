#!/usr/bin/env python3
"""Retrieval and answer parameters chosen leave-one-corpus-out (issue 34).

    PYTHONPATH=src:. .venv/bin/python scripts/eval_loco.py                # both grids
    PYTHONPATH=src:. .venv/bin/python scripts/eval_loco.py --grid answer  # one of them

Every evaluation set under eval/ (``scripts/eval_answers.py``: a folder with a
``corpus.json``; install their corpora first, their READMEs say how) is served as
``eval_answers.py`` serves it, and every setting of a grid of module constants is
scored on it: each question asked offline (the extractive answerer) and with the
recording model. A setting's score on a set is the mean of five rates: expected page
cited offline, expected facts in the offline answer, unanswerable questions declined
offline, answerable ones not refused, and an expected page among the model's sources
(the figures issue 34 asks for).

For each set, the setting is chosen on the **other** sets (the best mean score over
them; among equals, the one nearest the code's own values), and that set's figures are
reported at it: a set never chooses the setting it is scored with. A setting that
the other sets agree on but that loses on the held-out one shows as a loss there.

Grids (each constant patched where the code reads it; the service runs in this process):
  retrieval  RRF_K (fusion), CANDIDATES (each list's depth), BM25_B (length normalisation)
  answer     TOPIC_FLOORS' MiniLM value (meaning that suffices), MIN_COVERAGE (words that
             suffice), RELATIVE_CUTOFF (sentences kept), MAX_SENTENCES
  quoting    the offline answer's rules (``ragcore.chat.extractive``): QUOTE_QUESTIONS,
             QUOTE_INTRODUCED, MIN_GAIN
  collage    EXACT_WORD_ELSEWHERE (a further sentence from another document)
  names      NAMES_MUST_BE_FOUND (a name the question gives, "try_files", "QuickBooks", must be
             mentioned by the documents for them to support an answer)
  kinds      KIND_WEIGHT (a sentence carrying the kind of answer asked: a number, a path, a
             name), on the questions that ask for one of these kinds
  translation  WORD_TRANSLATIONS (0: none), EMBED_TRANSLATIONS (the dense side too), on
             the non-English questions only
Each grid runs with the other constants as the code has them.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_answers  # noqa: E402
from ragcore.chat.answer_kinds import answer_kind  # noqa: E402
from ragio.providers import AnswererChain  # noqa: E402

MINILM = ("local", "all-MiniLM-L6-v2-onnx-int8")

#: name -> (where the code reads it: module, attribute[, dictionary key]), values tried
GRIDS: dict[str, dict[str, tuple[list[tuple[Any, ...]], list[Any]]]] = {
    "retrieval": {
        "RRF_K": ([("ragio.knowledge.search", "RRF_K")], [5, 10, 20, 60]),
        "CANDIDATES": ([("ragcore.knowledge.retrieval", "CANDIDATES")], [25, 50, 100]),
        "BM25_B": ([("ragio.knowledge.search", "BM25_B")], [0.5, 0.75, 0.9]),
    },
    "answer": {
        "TOPIC_FLOOR": (
            [("ragcore.knowledge.retrieval", "TOPIC_FLOORS", MINILM)],
            [0.40, 0.45, 0.50],
        ),
        "MIN_COVERAGE": ([("ragcore.chat.support", "MIN_COVERAGE")], [0.5, 0.6, 0.7]),
        "RELATIVE_CUTOFF": ([("ragcore.chat.extractive", "RELATIVE_CUTOFF")], [0.3, 0.5, 0.7]),
        "MAX_SENTENCES": ([("ragcore.chat.extractive", "MAX_SENTENCES")], [2, 3]),
    },
    "quoting": {
        "QUOTE_QUESTIONS": ([("ragcore.chat.extractive", "QUOTE_QUESTIONS")], [False, True]),
        "QUOTE_INTRODUCED": ([("ragcore.chat.extractive", "QUOTE_INTRODUCED")], [True, False]),
        "MIN_GAIN": ([("ragcore.chat.extractive", "MIN_GAIN")], [0.0, 0.1, 0.2, 0.3]),
    },
    "translation": {
        "WORD_TRANSLATIONS": ([("ragio.chat.dictionaries", "WORD_TRANSLATIONS")], [2, 0, 1, 4]),
        "EMBED_TRANSLATIONS": (
            [("ragcore.chat.pipeline", "EMBED_TRANSLATIONS")],
            [False, True],
        ),
    },
    "names": {
        "NAMES_MUST_BE_FOUND": ([("ragcore.chat.pipeline", "NAMES_MUST_BE_FOUND")], [True, False]),
    },
    "kinds": {
        "KIND_WEIGHT": ([("ragcore.chat.extractive", "KIND_WEIGHT")], [1.0, 1.5, 2.0, 3.0]),
    },
    "collage": {
        "EXACT_WORD_ELSEWHERE": (
            [("ragcore.chat.extractive", "EXACT_WORD_ELSEWHERE")],
            [True, False],
        ),
    },
}

RATES = ("cited", "facts", "declined", "not refused", "in sources")
#: the kinds of question a grid is scored on (the others: every kind)
GRID_KINDS = {"translation": ["non-English"]}
#: the questions a grid is scored on, when not all of them (only these can move)
GRID_QUESTIONS = {"kinds": lambda question: answer_kind(question["question"]) is not None}
#: constants only the offline answerer reads: the model's prompt is the same whatever they are
MODEL_BLIND = frozenset(
    {
        "RELATIVE_CUTOFF",
        "MAX_SENTENCES",
        "QUOTE_QUESTIONS",
        "QUOTE_INTRODUCED",
        "MIN_GAIN",
        "EXACT_WORD_ELSEWHERE",
        "KIND_WEIGHT",
    }
)


def current(targets: list[tuple[Any, ...]]) -> Any:
    module, attribute, *key = targets[0]
    value = getattr(importlib.import_module(module), attribute)
    return value[key[0]] if key else value


@contextmanager
def patched(grid: dict[str, tuple[list[tuple[Any, ...]], list[Any]]], setting: dict[str, Any]):
    saved = []
    for name, value in setting.items():
        for module_name, attribute, *key in grid[name][0]:
            module = importlib.import_module(module_name)
            old = getattr(module, attribute)
            saved.append((module, attribute, old))
            setattr(module, attribute, {**old, key[0]: value} if key else value)
    try:
        yield
    finally:
        for module, attribute, old in reversed(saved):
            setattr(module, attribute, old)


def rates(offline: list[tuple[dict, dict]], model: list[tuple[dict, dict]]) -> dict[str, float]:
    def share(scores: list[dict], key: str, negate: bool = False) -> float:
        values = [bool(s[key]) != negate for s in scores if key in s]
        return sum(values) / len(values) if values else 0.0

    asked_offline = [s for _, s in offline]
    return {
        "cited": share(asked_offline, "cited"),
        "facts": share(asked_offline, "facts"),
        "declined": share(asked_offline, "declined"),
        "not refused": share(asked_offline, "false_refusal", negate=True),
        "in sources": share([s for _, s in model], "in_sources"),
    }


def score(figures: dict[str, float]) -> float:
    return sum(figures[r] for r in RATES) / len(RATES)


async def measure(
    grid_name: str, settings: list[dict[str, Any]], cache: Path
) -> dict[str, list[dict[str, float]]]:
    """Each set's figures at each setting (in the order of ``settings``)."""
    grid = GRIDS[grid_name]
    found: dict[str, list[dict[str, float]]] = {}
    for eval_set in eval_answers.eval_sets():
        questions = eval_answers.load_questions(eval_set.questions, GRID_KINDS.get(grid_name), None)
        questions = list(filter(GRID_QUESTIONS.get(grid_name, bool), questions))
        recorder = eval_answers.Recorder()
        async with eval_answers.served_corpus(cache, eval_set=eval_set) as served:
            offline_answerer = served.service.answerer
            model_answerer = AnswererChain((recorder,))
            found[eval_set.name] = []
            started = time.perf_counter()
            prompts: dict[str, list] = {}  # the model's figures depend on fewer constants
            for number, setting in enumerate(settings, 1):
                seen_by_model = json.dumps(
                    {k: v for k, v in setting.items() if k not in MODEL_BLIND}
                )
                with patched(grid, setting):
                    served.service.answerer = offline_answerer
                    offline = await eval_answers.ask_all(served.client, questions, None, False)
                    if seen_by_model not in prompts:
                        served.service.answerer = model_answerer
                        prompts[seen_by_model] = await eval_answers.ask_all(
                            served.client, questions, recorder, False
                        )
                found[eval_set.name].append(rates(offline, prompts[seen_by_model]))
                print(
                    f"{eval_set.name}: {number}/{len(settings)} settings "
                    f"({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                )
            served.service.answerer = offline_answerer
    return found


def nearness(setting: dict[str, Any], defaults: dict[str, Any], grid_name: str) -> int:
    """How many steps of the grid ``setting`` is from the code's own values."""
    grid = GRIDS[grid_name]
    steps = 0
    for name, value in setting.items():
        values = grid[name][1]
        if defaults[name] in values:
            steps += abs(values.index(value) - values.index(defaults[name]))
        else:
            steps += 1
    return steps


def report(
    grid_name: str, settings: list[dict[str, Any]], found: dict[str, list[dict[str, float]]]
) -> dict[str, Any]:
    grid = GRIDS[grid_name]
    defaults = {name: current(targets) for name, (targets, _) in grid.items()}
    at_defaults = settings.index(defaults) if defaults in settings else None
    names = list(found)
    print(f"\n{grid_name} grid: {len(settings)} settings; the code's own: {defaults}")
    header = f"{'held out':18s} {'chosen on the others':44s} " + " ".join(
        f"{r:>11s}" for r in RATES
    )
    print(header + f" {'score':>6s} {'at code':>7s}")
    chosen_by_set = {}
    for held in names:
        others = [n for n in names if n != held]

        def key(index: int, others: list[str] = others) -> tuple[float, int]:
            mean = sum(score(found[n][index]) for n in others) / len(others)
            return (round(mean, 6), -nearness(settings[index], defaults, grid_name))

        best = max(range(len(settings)), key=key)
        chosen_by_set[held] = settings[best]
        figures = found[held][best]
        code = score(found[held][at_defaults]) if at_defaults is not None else float("nan")
        shown = ", ".join(f"{k}={v}" for k, v in settings[best].items())
        print(
            f"{held:18s} {shown:44s} "
            + " ".join(f"{100 * figures[r]:10.1f}%" for r in RATES)
            + f" {score(figures):6.3f} {code:7.3f}"
        )
    everywhere = max(
        range(len(settings)),
        key=lambda i: (
            round(sum(score(found[n][i]) for n in names) / len(names), 6),
            -nearness(settings[i], defaults, grid_name),
        ),
    )
    print(f"best over all sets: {settings[everywhere]}")
    print("every setting, on every set:")
    for index, setting in enumerate(settings):
        shown = ", ".join(f"{k}={v}" for k, v in setting.items())
        for name in names:
            figures = found[name][index]
            print(
                f"  {shown:44s} {name:18s} "
                + " ".join(f"{100 * figures[r]:10.1f}%" for r in RATES)
                + f" {score(figures):6.3f}"
            )
    return {"defaults": defaults, "chosen": chosen_by_set, "overall": settings[everywhere]}


async def run(args: argparse.Namespace) -> None:
    results = {}
    for grid_name in args.grid:
        grid = GRIDS[grid_name]
        names = list(grid)
        settings = [
            dict(zip(names, values, strict=True))
            for values in itertools.product(*(grid[n][1] for n in names))
        ]
        found = await measure(grid_name, settings, Path(args.cache))
        results[grid_name] = {
            "settings": settings,
            "found": found,
            **report(grid_name, settings, found),
        }
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", nargs="+", choices=list(GRIDS), default=list(GRIDS))
    parser.add_argument("--cache", default=str(ROOT / "data" / "answers-cache"))
    parser.add_argument("--out", help="write every figure to this JSON file")
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
