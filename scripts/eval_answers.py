#!/usr/bin/env python3
"""Answer quality of the real service over HTTP, on evaluation sets of documentation.

    apt-get install debian-handbook debian-faq     # the corpus (eval/answers/README.md)
    .venv/bin/python scripts/eval_answers.py                 # offline: the extractive answerer
    .venv/bin/python scripts/eval_answers.py --model         # a fake model that records its prompt
    .venv/bin/python scripts/eval_answers.py --kinds fact unanswerable --limit 5 --show
    .venv/bin/python scripts/eval_answers.py --failures      # also list the questions missed
    .venv/bin/python scripts/eval_answers.py --check-set     # the set against the stored pages
    .venv/bin/python scripts/eval_answers.py --set eval/answers-apache   # another set
    .venv/bin/python scripts/eval_answers.py --all           # every set under eval/

A set is a folder with ``corpus.json`` (the command that installs its corpus and, per
document-name prefix, a folder and a file pattern) and ``questions.jsonl``:
``eval/answers`` (Debian, the default), ``eval/answers-apache``, ``eval/answers-gnucash``.
The service runs in-process as ``ragchat serve`` would run it (``ragio.startup.open_service``,
served by Hypercorn on 127.0.0.1, httpx against it), on an embedded PostgreSQL under
``--cache`` (one database per set) with the local embedder. The corpus is added page by
page through ``POST /documents`` (multipart upload, named by its path under its folder,
e.g. ``debian-handbook/apt.html``, ``apache/mod/core.html``); the database is kept, with
the corpus' fingerprint, so a second run does not add it again (``--reingest`` forces
it). Then every question of the set is asked through ``POST /chat``.

Offline (default), per kind and overall:
  cited    an expected page among the answer's ``citations[].document_name``
  facts    every expected fact in the answer (case-insensitive; a fact given as a list is
           met by any of its alternatives)
  refused  the answer is the service's "not found" sentence for the question's language
           (``ragcore.language.NOT_FOUND``, any language accepted) with no citation;
           for unanswerable questions it is "declined", for the others a false refusal

With ``--model``, the answering provider is a fake model that records the prompt it is
given and answers citing source 1, so what is scored is retrieval as the model would see
it: an expected page among the prompt's sources (``Generate.prompt.sources``), first,
the mean reciprocal rank of the first expected page, and how many unanswerable questions
reached the model at all (the rest were declined before it, with no sources).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tests.io.conftest import serve_app  # noqa: E402

import eval_retrieval  # noqa: E402
from ragcore.generation import Generate, ModelReply  # noqa: E402
from ragcore.language import NOT_FOUND, language_name  # noqa: E402
from ragcore.settings import load_settings  # noqa: E402
from ragcore.usage import TokenUsage  # noqa: E402
from ragio.chat.dictionaries import keep_dictionaries  # noqa: E402
from ragio.db.embedded import EmbeddedPostgres  # noqa: E402
from ragio.http.app import create_app  # noqa: E402
from ragio.providers import AnswererChain  # noqa: E402
from ragio.startup import open_service  # noqa: E402

EVAL_VERSION = "1"  # change to rebuild the cached databases
SETS = ROOT / "eval"
DEFAULT_SET = SETS / "answers"
KINDS = ("fact", "how-to", "paraphrase", "multi-document", "unanswerable", "non-English")
REFUSALS = {sentence.casefold() for sentence in NOT_FOUND.values()}


# ------------------------------------------------------------------ the corpus


@dataclass(frozen=True)
class EvalSet:
    """An evaluation set: a folder with ``corpus.json`` (the install command and, per
    document-name prefix, a folder and a file pattern) and ``questions.jsonl``."""

    folder: Path

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def questions(self) -> Path:
        return self.folder / "questions.jsonl"

    @property
    def database(self) -> str:
        """Each set's own database in the one embedded server (the first set's name kept,
        so its cached database stays valid)."""
        suffix = self.name.removeprefix("answers").strip("-_").replace("-", "_")
        return f"answers_eval_{suffix}" if suffix else "answers_eval"

    def corpus(self) -> dict:
        return json.loads((self.folder / "corpus.json").read_text(encoding="utf-8"))

    def files(self) -> dict[str, Path]:
        """Document name (``<prefix>/<path under the folder>``) -> file, in name order."""
        corpus = self.corpus()
        files: dict[str, Path] = {}
        for prefix, where in corpus["folders"].items():
            folder = Path(where["folder"])
            found = sorted(folder.glob(where["pattern"]))
            if not found:
                raise SystemExit(f"no {where['pattern']} in {folder}: {corpus['install']}")
            for path in found:
                files[f"{prefix}/{path.relative_to(folder).as_posix()}"] = path
        return dict(sorted(files.items()))


def eval_sets() -> list[EvalSet]:
    """Every set under eval/ (the folders with a corpus.json)."""
    return [EvalSet(p.parent) for p in sorted(SETS.glob("*/corpus.json"))]


def corpus_files(eval_set: EvalSet = EvalSet(DEFAULT_SET)) -> dict[str, Path]:
    return eval_set.files()


def corpus_fingerprint(files: dict[str, Path]) -> str:
    digest = hashlib.sha256(EVAL_VERSION.encode())
    for name, path in files.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def ingested(url: str, fingerprint: str) -> bool:
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT value FROM eval_meta WHERE key = 'corpus'").fetchone()
        return row == (fingerprint,)
    except psycopg.Error:
        return False


def mark_ingested(url: str, fingerprint: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE eval_meta (key text PRIMARY KEY, value text)")
        conn.execute("INSERT INTO eval_meta VALUES ('corpus', %s)", (fingerprint,))
        conn.execute("VACUUM ANALYZE")


async def ingest(client: httpx.AsyncClient, files: dict[str, Path]) -> None:
    """Every page through POST /documents, as a user would upload it."""
    started = time.perf_counter()
    for count, (name, path) in enumerate(files.items(), 1):
        response = await client.post(
            "/documents",
            files={"file": (path.name, path.read_bytes(), "text/html")},
            data={"name": name},
        )
        if response.status_code not in (200, 201):
            raise SystemExit(f"POST /documents {name}: {response.status_code} {response.text}")
        print(f"\r  added {count}/{len(files)} pages", end="", file=sys.stderr, flush=True)
    print(f"\n  ingested in {time.perf_counter() - started:.0f} s", file=sys.stderr)


# ------------------------------------------------------------------ the fake model


ANSWER = "Here is what the documents say [1]."


@dataclass
class Recorder:
    """A provider that records the prompt it is given and answers citing source 1."""

    name: str = "recorder"
    model: str = "recorder"
    prompts: list[Any] = field(default_factory=list)

    async def generate(self, request: Generate) -> ModelReply:
        self.prompts.append(request.prompt)
        return ModelReply(ANSWER, provider=self.name, model=self.model)

    async def stream(self, request: Generate) -> AsyncIterator[str | TokenUsage]:
        self.prompts.append(request.prompt)
        yield ANSWER

    async def aclose(self) -> None:
        pass


# ------------------------------------------------------------------ scoring


def load_questions(path: Path, kinds: list[str] | None, limit: int | None) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        questions = [json.loads(line) for line in f if line.strip()]
    if kinds:
        questions = [q for q in questions if q["kind"] in kinds]
    if limit:
        per_kind: dict[str, int] = defaultdict(int)
        kept = []
        for q in questions:
            per_kind[q["kind"]] += 1
            if per_kind[q["kind"]] <= limit:
                kept.append(q)
        questions = kept
    return questions


def normal(text: str) -> str:
    """Case and runs of white space (no-break spaces too: the handbook writes "2\u00a0TiB")
    folded."""
    return " ".join(text.split()).casefold()


def has_fact(answer: str, fact: str | list[str]) -> bool:
    alternatives = [fact] if isinstance(fact, str) else fact
    text = normal(answer)
    return any(normal(alt) in text for alt in alternatives)


def is_refusal(body: dict) -> bool:
    return body["answer"].strip().casefold() in REFUSALS and not body["citations"]


def score_offline(q: dict, body: dict) -> dict[str, Any]:
    refused = is_refusal(body)
    cited = [c["document_name"] for c in body["citations"]]
    if q["kind"] == "unanswerable":
        return {"declined": refused}
    return {
        "cited": any(page in cited for page in q["expected_pages"]),
        "all_cited": all(page in cited for page in q["expected_pages"]),
        "facts": all(has_fact(body["answer"], fact) for fact in q["expected_facts"]),
        "false_refusal": refused,
    }


def score_model(q: dict, prompt: Any | None) -> dict[str, Any]:
    names = [source.hit.document_name for source in prompt.sources] if prompt else []
    if q["kind"] == "unanswerable":
        return {"reached_model": prompt is not None, "sources": len(names)}
    ranks = [k for k, name in enumerate(names, 1) if name in q["expected_pages"]]
    return {
        "in_sources": bool(ranks),
        "all_in_sources": all(page in names for page in q["expected_pages"]),
        "first": bool(ranks) and ranks[0] == 1,
        "rr": 1 / ranks[0] if ranks else 0.0,
        "not_asked": prompt is None,
        # the model told to answer in the question's language (when it is asked at all)
        "told_language": prompt is not None
        and f"Write the answer in {language_name(q['language'])}." in prompt.system,
    }


def missed(score: dict[str, Any]) -> bool:
    """A question the answer (offline scores) or the prompt (``--model``) got wrong."""
    return (
        score.get("declined") is False
        or score.get("reached_model") is True
        or score.get("cited") is False
        or score.get("facts") is False
        or score.get("in_sources") is False
    )


def percent(values: list[bool]) -> str:
    return f"{100 * sum(values) / len(values):5.1f}%" if values else "    -"


def table(results: list[tuple[dict, dict]], model: bool) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for q, score in results:
        groups[q["kind"]].append(score)
        groups["overall"].append(score)
    kinds = [k for k in KINDS if k in groups] + sorted(
        k for k in groups if k not in KINDS and k != "overall"
    )
    rows = []
    if model:
        rows.append(
            f"{'kind':16s} {'n':>3s} {'in srcs':>7s} {'all in':>7s} {'first':>7s} "
            f"{'MRR':>6s} {'not asked':>9s} {'unans. reached':>15s}"
        )
    else:
        rows.append(
            f"{'kind':16s} {'n':>3s} {'cited':>7s} {'all cited':>9s} {'facts':>7s} "
            f"{'false ref.':>10s} {'declined':>9s}"
        )
    for kind in [*kinds, "overall"]:
        scores = groups[kind]
        answerable = [s for s in scores if "declined" not in s and "reached_model" not in s]
        unanswerable = [s for s in scores if "declined" in s or "reached_model" in s]
        if model:
            mrr = sum(s["rr"] for s in answerable) / len(answerable) if answerable else None
            rows.append(
                f"{kind:16s} {len(scores):3d} "
                f"{percent([s['in_sources'] for s in answerable]):>7s} "
                f"{percent([s['all_in_sources'] for s in answerable]):>7s} "
                f"{percent([s['first'] for s in answerable]):>7s} "
                f"{(f'{mrr:.3f}' if mrr is not None else '-'):>6s} "
                f"{percent([s['not_asked'] for s in answerable]):>9s} "
                f"{percent([s['reached_model'] for s in unanswerable]):>15s}"
            )
        else:
            rows.append(
                f"{kind:16s} {len(scores):3d} "
                f"{percent([s['cited'] for s in answerable]):>7s} "
                f"{percent([s['all_cited'] for s in answerable]):>9s} "
                f"{percent([s['facts'] for s in answerable]):>7s} "
                f"{percent([s['false_refusal'] for s in answerable]):>10s} "
                f"{percent([s['declined'] for s in unanswerable]):>9s}"
            )
    return "\n".join(rows)


def _told(scores: list[dict]) -> list[bool]:
    """Of the questions the model was asked, whether it was told their language."""
    return [s["told_language"] for s in scores if not s["not_asked"]]


def by_language(results: list[tuple[dict, dict]], model: bool) -> str:
    """The answerable questions' main score by the question's language (issue 34: the
    non-English ones within 0.10 of the English ones); for the non-English ones, their
    English twins (``translation_of``) beside them when the set names them."""
    key = "in_sources" if model else "cited"
    second = "first" if model else "facts"
    answerable = [(q, s) for q, s in results if key in s]
    by_id = {q["id"]: s for q, s in answerable}
    groups: dict[str, list[dict]] = defaultdict(list)
    twins: dict[str, list[dict]] = defaultdict(list)
    for q, score in answerable:
        groups[q["language"]].append(score)
        if (twin := by_id.get(q.get("translation_of", ""))) is not None:
            twins[q["language"]].append(twin)
    told = "   answer asked in it" if model else ""
    rows = [f"{'language':16s} {'n':>3s} {key:>10s} {second:>7s}   their English twins{told}"]
    for language in sorted(groups, key=lambda code: (code != "en", code)):
        scores = groups[language]
        twin_scores = twins.get(language, [])
        rows.append(
            f"{language:16s} {len(scores):3d} {percent([s[key] for s in scores]):>10s} "
            f"{percent([s[second] for s in scores]):>7s}   "
            + (
                " ".join(percent([s[k] for s in twin_scores]) for k in (key, second))
                if twin_scores
                else "-"
            )
            + (f"   {percent(asked_in)}" if model and (asked_in := _told(scores)) else "")
        )
    return "\n".join(rows)


#: words a paraphrase may share with its page (``--check-set``)
FUNCTION_WORDS = frozenset(
    "a an the of to in on for by with and or is are was were be been what which who whom "
    "whose how do does did i my me can could should would will from at as that this it its "
    "into over while when where why after before each other people them they their there "
    "than then so if not no".split()
)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9'-]+", text.casefold()))


async def check_set(client: httpx.AsyncClient, questions: list[dict]) -> int:
    """Problems of the set against the stored corpus: an expected page that is not stored,
    an expected fact in none of its question's expected pages, a paraphrase sharing a
    content word with its page, a translation (``translation_of``) expecting other pages
    or facts than its original. Prints them; their count."""
    by_id = {q["id"]: q for q in questions}
    ids: dict[str, int] = {}
    page: str | None = "/documents?limit=200"
    while page is not None:
        listed = (await client.get(page)).raise_for_status().json()
        ids |= {doc["name"]: doc["id"] for doc in listed["documents"]}
        page = listed["next"]
    texts: dict[str, str] = {}
    problems = 0
    for q in questions:
        for page in q["expected_pages"]:
            if page not in ids:
                print(f"{q['id']}: expected page {page} is not stored")
                problems += 1
            elif page not in texts:
                response = await client.get(f"/documents/{ids[page]}")
                texts[page] = response.raise_for_status().json()["text"]
        for fact in q["expected_facts"]:
            if not any(has_fact(texts.get(page, ""), fact) for page in q["expected_pages"]):
                print(f"{q['id']}: expected fact {fact!r} is in none of {q['expected_pages']}")
                problems += 1
        twin = by_id.get(q.get("translation_of", ""))
        if "translation_of" in q and (
            twin is None
            or (twin["expected_pages"], twin["expected_facts"])
            != (q["expected_pages"], q["expected_facts"])
        ):
            print(f"{q['id']}: not the pages and facts of {q['translation_of']}, its original")
            problems += 1
        if q["kind"] == "paraphrase":
            asked = words(q["question"]) - FUNCTION_WORDS
            for page in q["expected_pages"]:
                shared = sorted(asked & words(texts.get(page, "")))
                if shared:
                    print(f"{q['id']}: a paraphrase shares {shared} with {page}")
                    problems += 1
    print(f"{len(questions)} questions checked, {problems} problems")
    return problems


# ------------------------------------------------------------------ the run


async def ask_all(
    client: httpx.AsyncClient, questions: list[dict], recorder: Recorder | None, show: bool
) -> list[tuple[dict, dict]]:
    results = []
    for count, q in enumerate(questions, 1):
        before = len(recorder.prompts) if recorder else 0
        response = await client.post("/chat", json={"question": q["question"]})
        if response.status_code != 200:
            raise SystemExit(f"POST /chat {q['id']}: {response.status_code} {response.text}")
        body = response.json()
        expected = "recorder" if recorder is not None else "extractive"
        if body["provider"] not in (expected, None):
            raise SystemExit(f"{q['id']}: answered by {body['provider']}, not {expected}")
        if recorder is not None:
            prompt = recorder.prompts[-1] if len(recorder.prompts) > before else None
            score = score_model(q, prompt)
        else:
            score = score_offline(q, body)
        results.append((q, score))
        print(f"\r  asked {count}/{len(questions)}", end="", file=sys.stderr, flush=True)
        if show:
            cited = sorted({c["document_name"] for c in body["citations"]})
            print(
                f"\n{q['id']} [{q['kind']}] {q['question']}\n  expected {q['expected_pages']}"
                f"\n  score {score}\n  cited {cited}\n  answer {body['answer'][:300]!r}",
                file=sys.stderr,
            )
    print(file=sys.stderr)
    return results


@dataclass
class Served:
    """The service on the corpus: a client of its HTTP API, the service, its database."""

    client: httpx.AsyncClient
    service: Any
    url: str


@asynccontextmanager
async def served_corpus(
    cache: Path,
    reingest: bool = False,
    recorder: Recorder | None = None,
    eval_set: EvalSet = EvalSet(DEFAULT_SET),
    dictionaries: str | None = None,
) -> AsyncIterator[Served]:
    """The service as ``ragchat serve`` runs it, on the set's database under ``cache``
    (the corpus added first when it is not there yet, or with ``reingest``), answering
    offline, or through ``recorder``."""
    files = eval_set.files()
    fingerprint = corpus_fingerprint(files)
    server = EmbeddedPostgres(cache / "pg")
    await trio.to_thread.run_sync(server.start)
    url = server.url(eval_set.database)
    try:
        fresh = reingest or not await trio.to_thread.run_sync(ingested, url, fingerprint)
        if fresh:
            await eval_retrieval.fresh_database(server, eval_set.database)
        env = {
            "DATABASE_URL": url,
            "DATA_DIR": str(cache / "data"),
            "EMBEDDING_PROVIDER": "local",
        }
        if dictionaries is not None:  # else the service's default, as `ragchat serve`
            env["DICTIONARY_DIR"] = dictionaries
        if recorder is None:
            env["LLM_PROVIDER"] = "extractive"
        async with open_service(load_settings(env)) as service:
            await service.embedder.ready()  # one graph for every vector
            await keep_dictionaries(service)  # as `ragchat serve` does when it starts
            if recorder is not None:
                service.answerer = AnswererChain((recorder,))
            async with trio.open_nursery() as nursery:
                base_url, stop = await serve_app(create_app(service), nursery)
                async with httpx.AsyncClient(base_url=base_url, timeout=300) as client:
                    if fresh:
                        print(f"adding {len(files)} pages", file=sys.stderr)
                        await ingest(client, files)
                        await trio.to_thread.run_sync(mark_ingested, url, fingerprint)
                    yield Served(client, service, url)
                stop.set()
    finally:
        await trio.to_thread.run_sync(server.stop)


async def run_set(args: argparse.Namespace, eval_set: EvalSet) -> int:
    started = time.perf_counter()
    questions = load_questions(eval_set.questions, args.kinds, args.limit)
    files = eval_set.files()
    recorder = Recorder() if args.model else None
    async with served_corpus(
        Path(args.cache), args.reingest, recorder, eval_set, args.dictionaries
    ) as served:
        if args.check_set:
            return 1 if await check_set(served.client, questions) else 0
        asking = time.perf_counter()
        results = await ask_all(served.client, questions, recorder, args.show)
        asked = time.perf_counter() - asking
    mode = "with a recording model (--model)" if args.model else "offline (extractive answerer)"
    print(f"{eval_set.name}: {len(questions)} questions, {len(files)} pages, {mode}")
    print(table(results, args.model))
    print(by_language(results, args.model))
    print(
        f"asked in {asked:.0f} s ({1000 * asked / max(1, len(questions)):.0f} ms a question); "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    if args.failures:
        for q, score in results:
            if missed(score):
                print(f"  {q['id']:8s} {q['kind']:14s} {score}")
    return 0


async def run(args: argparse.Namespace) -> int:
    sets = eval_sets() if args.all else [EvalSet(Path(args.set))]
    worst = 0
    for eval_set in sets:
        worst = max(worst, await run_set(args, eval_set))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        default=str(ROOT / "data" / "answers-cache"),
        help="folder for the embedded database (default %(default)s)",
    )
    parser.add_argument(
        "--set",
        default=str(DEFAULT_SET),
        help="the evaluation set: a folder with corpus.json and questions.jsonl "
        "(default %(default)s)",
    )
    parser.add_argument("--all", action="store_true", help="every set under eval/, one by one")
    parser.add_argument(
        "--model", action="store_true", help="score the prompt a (fake, recording) model is given"
    )
    parser.add_argument("--kinds", nargs="+", choices=KINDS, help="only these kinds")
    parser.add_argument("--limit", type=int, help="at most this many questions of each kind")
    parser.add_argument("--reingest", action="store_true", help="add the corpus again")
    parser.add_argument(
        "--dictionaries",
        help="DICTIONARY_DIR: the FreeDict dictionaries that translate questions in other "
        "languages (default: the service's, /usr/share/dictd); off: no translation",
    )
    parser.add_argument("--show", action="store_true", help="print every answer")
    parser.add_argument("--failures", action="store_true", help="list the questions missed")
    parser.add_argument(
        "--check-set",
        action="store_true",
        help="ask nothing: check that each expected fact is in an expected page's stored text",
    )
    raise SystemExit(trio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()
