"""The owner's answers (/answers: docs/answers.md) and what customers asked that was not
answered well (/insights: GET /insights/gaps, GET /insights/top-questions)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import attrs

from ragcore.answers.faq import (
    FORMATS,
    MAX_ANSWER_CHARS,
    MAX_FAQ_BYTES,
    MAX_QUESTION_CHARS,
    MAX_QUESTIONS,
    check_answer_text,
    check_question_list,
)
from ragcore.api.conversations import CHANNELS, INSTANT, channel_and_span
from ragcore.converter import listing, refusal, unless_sent
from ragcore.schema import described, text

DEFAULT_ANSWERS = 50
MAX_ANSWERS = 200
MAX_ANSWER_ID = 2**62
DEFAULT_GROUPS = 20
MAX_GROUPS = 100
MAX_OFFSET = 10_000

QUESTIONS_SCHEMA = described(
    "the customers' questions it answers, in their words (any phrasing close to one is "
    "answered too)",
    minItems=1,
    maxItems=MAX_QUESTIONS,
    uniqueItems=True,
    items={"type": "string", "maxLength": MAX_QUESTION_CHARS, "pattern": r"\w"},
)
ANSWER_SCHEMA = text(MAX_ANSWER_CHARS, "what the customer is told, as written")


@listing()
@attrs.frozen
class NewOwnerAnswer:
    """POST /answers: an answer and the questions it covers."""

    questions: Annotated[tuple[str, ...], QUESTIONS_SCHEMA] = attrs.field(
        converter=check_question_list, metadata=refusal("is required: a list of questions")
    )
    answer: Annotated[str, ANSWER_SCHEMA] = attrs.field(
        converter=check_answer_text, metadata=refusal("is required, as text")
    )


@listing()
@attrs.frozen
class OwnerAnswerPatch:
    """PATCH /answers/{id}: what to change; {} changes nothing."""

    questions: Annotated[tuple[str, ...] | None, QUESTIONS_SCHEMA] = unless_sent(
        check_question_list
    )
    answer: Annotated[str | None, ANSWER_SCHEMA] = unless_sent(check_answer_text)


@attrs.frozen
class OwnerAnswerVersion:
    version: int
    questions: list[str]
    answer: str
    changed_at: datetime
    change: Literal["created", "edited", "imported", "deleted"]


@attrs.frozen
class OwnerAnswer:
    id: Annotated[int, described("for GET, PATCH and DELETE /answers/{id}")]
    questions: list[str]
    answer: str
    version: Annotated[int, described("1 when written, one more at each edit")]
    created_at: datetime
    updated_at: datetime
    served: Annotated[int, described("how many questions it has answered as it is")] = 0
    versions: Annotated[
        list[OwnerAnswerVersion] | None,
        described("every version, the latest first (GET /answers/{id} only)"),
    ] = unless_sent()


@attrs.frozen
class OwnerAnswers:
    answers: list[OwnerAnswer]
    next_before: Annotated[int | None, described("?before= for the next page; null: the last")]


@attrs.frozen
class OwnerAnswersQuery:
    limit: Annotated[int, described(minimum=1, maximum=MAX_ANSWERS)] = DEFAULT_ANSWERS
    before: Annotated[
        int,
        described(
            "those written before this one, latest first (next_before of the last page)",
            minimum=1,
            maximum=MAX_ANSWER_ID,
        ),
    ] = 0


@listing()
@attrs.frozen
class FaqImport:
    """POST /answers/import: an FAQ file's text, all imported or none."""

    format: Literal["csv", "json"] = attrs.field(
        metadata=refusal(f"is required: one of {', '.join(FORMATS)}")
    )
    text: Annotated[
        str,
        described(
            "the file: CSV with a header row naming a question and an answer column, or a "
            'JSON array of {"question" or "questions", "answer"} objects',
            maxLength=MAX_FAQ_BYTES,
        ),
    ] = attrs.field(metadata=refusal("is required: the file's text"))


@attrs.frozen
class FaqLineProblem:
    line: int
    detail: str


@attrs.frozen
class FaqImported:
    created: Annotated[int, described("new answers")]
    updated: Annotated[int, described("answers that had one of the file's questions, rewritten")]
    unchanged: Annotated[int, described("answers the file has as they already were")]
    answers: Annotated[list[int], described("the answers' ids, in the file's order")]


REASONS = ("not_found", "disliked", "handed_off")
Reason = Literal["not_found", "disliked", "handed_off"]


@attrs.frozen
class QuestionGroup:
    question: Annotated[str, described("the question that best stands for the group")]
    count: Annotated[int, described("how many times it was asked")]
    examples: Annotated[list[str], described("its different phrasings, the latest first (≤ 5)")]
    channels: Annotated[list[str], described("where it was asked")]
    last_seen: datetime
    reasons: Annotated[
        dict[str, int],
        described(
            "how many were not answered (not_found), rated down (disliked) or handed to a "
            "person (handed_off); in top-questions, among all asked"
        ),
    ]
    answered: Annotated[bool, described("an owner's answer covers it (answer_id)")]
    answer_id: int | None
    conversations: Annotated[list[int], described("where it was asked, the latest first (≤ 5)")]


@attrs.frozen
class QuestionGroups:
    groups: list[QuestionGroup]
    total: Annotated[int, described("groups in all (page with ?offset=)")]
    next_offset: Annotated[int | None, described("?offset= for the next page; null: the last")]
    questions: Annotated[int, described("questions grouped (the latest MAX_INSIGHT_QUESTIONS)")]


@attrs.frozen
class InsightsQuery:
    since: Annotated[
        str,
        described(
            "only questions asked from this instant (a date is its midnight UTC, a time "
            "without an offset is UTC)",
            **INSTANT,
        ),
    ] = ""
    until: Annotated[
        str, described("only questions asked before this instant, later than since", **INSTANT)
    ] = ""
    channel: Annotated[str, described("only this channel", enum=["", *CHANNELS])] = ""
    answered: Annotated[
        str,
        described(
            "true: only the groups an owner's answer covers; false: only the others (the "
            "gaps' default); empty: both (top-questions' default)",
            enum=["", "true", "false"],
        ),
    ] = ""
    limit: Annotated[int, described(minimum=1, maximum=MAX_GROUPS)] = DEFAULT_GROUPS
    offset: Annotated[int, described(minimum=0, maximum=MAX_OFFSET)] = 0

    def filters(self) -> dict[str, Any]:
        """The query's filters for the store, checked: InvalidInput naming a bad one."""
        return channel_and_span(self.channel, self.since, self.until)

    def covered(self, default: bool | None) -> bool | None:
        """Which groups to show: answered (True), not (False), both (None)."""
        return {"true": True, "false": False}.get(self.answered, default)
