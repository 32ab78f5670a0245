"""The owner's answers as written: checked one by one (the API's bodies), or many at once
from an FAQ file (``ragchat answers import``, POST /answers/import), where every
malformed entry is reported by its line and nothing is imported unless all are good.

An FAQ is CSV with a header row naming a ``question`` and an ``answer`` column (other
columns are ignored; a question cell may hold several phrasings, one per line), or JSON:
an array of ``{"question": "…", "answer": "…"}`` or ``{"questions": ["…", …],
"answer": "…"}`` objects.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from typing import Any

import attrs

from ragcore.answers.matching import normalized
from ragcore.errors import InvalidInput

MAX_QUESTIONS = 50  # phrasings one answer covers
MAX_QUESTION_CHARS = 500
MAX_ANSWER_CHARS = 4000
MAX_ENTRIES = 2000  # answers one import brings
MAX_FAQ_BYTES = 2_000_000
FORMATS = ("csv", "json")


def check_question_list(value: Any, field: str = "questions") -> tuple[str, ...]:
    """The phrasings an answer covers: 1 to MAX_QUESTIONS texts, each stripped, not blank,
    at most MAX_QUESTION_CHARS, none twice (word for word, ``normalized``)."""
    if not isinstance(value, list | tuple) or not value:
        raise InvalidInput(field, f"must be a list of 1 to {MAX_QUESTIONS} questions")
    if len(value) > MAX_QUESTIONS:
        raise InvalidInput(field, f"has {len(value)} questions; the limit is {MAX_QUESTIONS}")
    questions: list[str] = []
    seen: set[str] = set()
    for number, item in enumerate(value, start=1):
        question = check_one_question(item, f"{field}[{number - 1}]")
        key = normalized(question)
        if key in seen:
            raise InvalidInput(f"{field}[{number - 1}]", "repeats an earlier question")
        seen.add(key)
        questions.append(question)
    return tuple(questions)


def check_one_question(value: Any, field: str = "question") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, "must be a question, as text")
    question = " ".join(value.split())
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(
            field, f"has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    if not normalized(question):
        raise InvalidInput(field, "has no words")
    return question


def check_answer_text(value: Any, field: str = "answer") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, "must be the answer, as text")
    answer = value.strip()
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidInput(field, f"has {len(answer)} characters; the limit is {MAX_ANSWER_CHARS}")
    if "\x00" in answer:
        raise InvalidInput(field, "must not contain NUL characters")
    return answer


@attrs.frozen
class FaqEntry:
    """One answer of an FAQ file, with the line it begins on."""

    line: int
    questions: tuple[str, ...]
    answer: str


@attrs.frozen
class FaqProblem:
    line: int
    detail: str


class FaqInvalid(ValueError):
    """The file cannot be imported as it is: every problem, by line."""

    def __init__(self, problems: Sequence[FaqProblem]):
        self.problems = tuple(problems)
        shown = "; ".join(f"line {p.line}: {p.detail}" for p in self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        super().__init__(f"{len(self.problems)} problem(s): {shown}{more}")


def faq_format(name: str, content_type: str = "") -> str | None:
    """``csv`` or ``json`` from a file's name or a body's media type; None: neither."""
    lowered = name.lower()
    for kind in FORMATS:
        if lowered.endswith(f".{kind}") or content_type.split(";")[0].strip() in (
            f"text/{kind}",
            f"application/{kind}",
        ):
            return kind
    return None


def read_faq(text: str, kind: str) -> list[FaqEntry]:
    """The entries of an FAQ in ``kind`` (``csv``, ``json``); FaqInvalid listing every
    malformed one by line, and questions that two entries both claim."""
    if kind not in FORMATS:
        raise InvalidInput("format", f"must be one of {', '.join(FORMATS)}")
    text = text.removeprefix("\ufeff")
    raw, problems = _csv_rows(text) if kind == "csv" else _json_items(text)
    entries: list[FaqEntry] = []
    claimed: dict[str, int] = {}
    for line, questions, answer in raw:
        try:
            entry = FaqEntry(line, check_question_list(questions), check_answer_text(answer))
        except InvalidInput as refused:
            problems.append(FaqProblem(line, f"{refused.field} {refused.message}"))
            continue
        for question in entry.questions:
            first = claimed.setdefault(normalized(question), line)
            if first != line:
                problems.append(FaqProblem(line, f"{question!r} is also on line {first}"))
        entries.append(entry)
    if not raw and not problems:  # an empty file or array
        problems.append(FaqProblem(1, "has no answers"))
    if len(entries) > MAX_ENTRIES:
        problems.append(FaqProblem(1, f"has {len(entries)} answers; the limit is {MAX_ENTRIES}"))
    if problems:
        raise FaqInvalid(sorted(problems, key=lambda p: p.line))
    return entries


Raw = tuple[int, Any, Any]  # line, questions, answer


def _csv_rows(text: str) -> tuple[list[Raw], list[FaqProblem]]:
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as broken:
        return [], [FaqProblem(1, f"is not CSV: {broken}")]
    names = [name.strip().casefold() for name in header or ()]
    if "question" not in names or "answer" not in names:
        return [], [FaqProblem(1, 'needs a header row with a "question" and an "answer" column')]
    question_at, answer_at = names.index("question"), names.index("answer")
    rows: list[Raw] = []
    problems: list[FaqProblem] = []
    line = reader.line_num + 1
    while True:
        try:
            row = next(reader, None)
        except csv.Error as broken:
            problems.append(FaqProblem(line, f"is not CSV: {broken}"))
            break
        if row is None:
            break
        if any(cell.strip() for cell in row):
            if len(row) <= max(question_at, answer_at):
                problems.append(FaqProblem(line, "has no answer column"))
            else:
                phrasings = [q for q in row[question_at].splitlines() if q.strip()]
                rows.append((line, phrasings, row[answer_at]))
        line = reader.line_num + 1
    return rows, problems


def _json_items(text: str) -> tuple[list[Raw], list[FaqProblem]]:
    decoder = json.JSONDecoder()

    def line_at(position: int) -> int:
        return text.count("\n", 0, position) + 1

    position = _skip_space(text, 0)
    if position >= len(text) or text[position] != "[":
        return [], [FaqProblem(line_at(position), "must be a JSON array of answers")]
    position = _skip_space(text, position + 1)
    rows: list[Raw] = []
    problems: list[FaqProblem] = []
    if text[position : position + 1] == "]":
        return rows, _trailing(text, position + 1, line_at)
    while True:
        try:
            item, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as broken:
            return rows, [*problems, FaqProblem(line_at(broken.pos), f"is not JSON: {broken.msg}")]
        entry = _json_entry(line_at(position), item)
        if isinstance(entry, FaqProblem):
            problems.append(entry)
        else:
            rows.append(entry)
        position = _skip_space(text, end)
        if text[position : position + 1] == ",":
            position = _skip_space(text, position + 1)
            continue
        if text[position : position + 1] == "]":
            return rows, [*problems, *_trailing(text, position + 1, line_at)]
        return rows, [*problems, FaqProblem(line_at(position), 'is not JSON: expected "," or "]"')]


def _json_entry(line: int, item: Any) -> Raw | FaqProblem:
    if not isinstance(item, dict):
        return FaqProblem(line, 'must be an object: {"question": "…", "answer": "…"}')
    unknown = sorted(set(item) - {"question", "questions", "answer"})
    if unknown:
        return FaqProblem(line, f"has unknown field(s): {', '.join(unknown)}")
    if ("question" in item) == ("questions" in item):
        return FaqProblem(line, 'needs "question" (one) or "questions" (a list), not both')
    questions = [item["question"]] if "question" in item else item["questions"]
    return (line, questions, item.get("answer"))


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _trailing(text: str, position: int, line_at: Any) -> list[FaqProblem]:
    rest = _skip_space(text, position)
    return [] if rest >= len(text) else [FaqProblem(line_at(rest), "has text after the array")]
