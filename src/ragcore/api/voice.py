"""POST /webhook/voice's form, and GET /voice/calls: the phone calls and their turns, as
recorded by the voice server."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Literal

import attrs

from ragcore.api.problems import ProblemError
from ragcore.chat.timings import STAGES
from ragcore.schema import described

DEFAULT_CALLS = 20
MAX_CALLS = 100
MAX_CALL_ID = 2**62


@attrs.frozen
class TurnCitation:
    number: int
    document_id: Annotated[int | None, described("null for live data")]
    document_name: str
    live_action_id: Annotated[
        int | None, described("the live-data action whose rows were cited; null for a document")
    ] = None


@attrs.frozen
class VoiceTurn:
    turn: int
    question: Annotated[str | None, described("as transcribed")]
    answer: Annotated[str | None, described("the text spoken")]
    outcome: Annotated[
        Literal["answered", "interrupted", "failed", "hung up", "handed_off", "to_person"],
        described(
            "handed_off: this turn handed the call to a person (its answer is the notice "
            "said); to_person: a message the caller left for the person"
        ),
    ]
    citations: list[TurnCitation]
    role: str | None
    provider: str | None
    model: str | None
    language: str | None
    stages: Annotated[
        dict[str, int],
        described(
            "milliseconds each stage took, those the turn reached: transcript_ms, from the "
            "end of the caller's speech to the final transcript; first_token_ms, from the "
            "transcript to the model's first text; first_sentence_ms, from the transcript "
            "to the first sentence written; first_audio_ms, from that to its speech's first "
            "byte; first_frame_ms, from that to its first frame sent; voice_to_voice_ms, "
            "from the end of the caller's speech to that frame; answer_ms, from the "
            "transcript to the whole answer; stalled_ms, the longest the caller's playback "
            "ran dry once the answer had begun; and the answer's own stages, as its "
            f"conversation's turn has them: {', '.join(STAGES)}"
        ),
    ]
    created_at: datetime


@attrs.frozen
class VoiceCall:
    id: Annotated[int, described("for ?before= (paging)")]
    call_sid: Annotated[str, described("the provider's call id")]
    caller_hash: Annotated[
        str,
        described(
            "SHA-256 of voice:<the caller's number>: the same caller gives the same hash; the "
            "number is not kept",
            pattern="^[0-9a-f]{64}$",
        ),
    ]
    role: Annotated[str | None, described("the role answering")]
    started_at: datetime
    ended_at: datetime | None
    end_reason: str | None
    turns: list[VoiceTurn]


@attrs.frozen
class VoiceCalls:
    calls: list[VoiceCall]
    next_before: int | None


@attrs.frozen
class CallsQuery:
    limit: Annotated[int, described(minimum=1, maximum=MAX_CALLS)] = DEFAULT_CALLS
    before: Annotated[
        int,
        described(
            "calls that began before this one (next_before of the last page)",
            minimum=1,
            maximum=MAX_CALL_ID,
        ),
    ] = 0


def incoming_call(form: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """The caller (``From``) and the call id (``CallSid``) of the provider's voice webhook
    form, each field's first value; a 400 problem when either is missing."""
    fields: dict[str, str] = {}
    for name, value in form:
        fields.setdefault(name, value)
    missing = [name for name in ("CallSid", "From") if not fields.get(name)]
    if missing:
        raise ProblemError(400, f"not a voice call: the form has no {' and no '.join(missing)}")
    return fields["From"], fields["CallSid"]
