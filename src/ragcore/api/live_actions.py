"""/live-actions: the owner's live-data actions (SPEC rule 9, issue 14) as created,
changed and shown, their dry run and their execution log.

An action is a query template on one data source (``ragcore.live.templates``), run while
a customer waits when a trigger phrase or auto-matching calls for it
(``ragcore.live.matching``). These are the rules of its body: each field checked, and the
whole action checked against its source's kind when saved, so an action that can never
run (no trigger and no auto-matching; a write without a trigger: writes are never
auto-matched) is refused with the reason, never stored to stay silent.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from datetime import datetime
from typing import Annotated, Any

import attrs

from ragcore.api.queries import MAX_STORED_ID
from ragcore.channel_names import ASKING_CHANNELS
from ragcore.converter import listing, refusal, structure_body, unless_sent
from ragcore.errors import InvalidInput, check_text
from ragcore.inputs import HAS_WORD, NOT_BLANK
from ragcore.integrations.kinds import SOURCE_TYPES
from ragcore.live.answers import LiveRun, RecordLive
from ragcore.live.extraction import PLACEHOLDERS, caller_value, extract
from ragcore.live.matching import LiveAction, normal_words
from ragcore.live.pipeline import LiveFailure, LiveRows, RunLiveQuery
from ragcore.live.templates import FIELD, MAX_TEMPLATE_CHARS, Template, check_template
from ragcore.schema import described, whole
from ragcore.schema import text as text_schema

CHANNELS = ASKING_CHANNELS
OUTCOMES = ("ran", "cached", "failed", "asked", "dry_run")
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 1000
MAX_TRIGGERS = 50
MAX_TRIGGER_CHARS = 200
MAX_VALUE_CHARS = 320  # an e-mail address is at most 254
MAX_MESSAGE_CHARS = 10_000
MAX_IDENTIFIER_CHARS = 200
MAX_RUNS_PAGE = 500
DRY_RUN_ROWS = 50
REQUIRED = ("name", "source_id", "template")
READ_ONLY = (
    "id",
    "source_name",
    "source_type",
    "params",
    "writes",
    "template_error",
    "created_at",
    "updated_at",
)
_KNOWN = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
TEMPLATE = (
    "the query, its values as placeholders (" + _KNOWN + "): one SQL statement (text) for "
    "mysql and postgresql; a path such as /orders/{order_id} (text) for rest_api; a filter "
    'document (an object) for mongodb; a search, "email = {email}" or {"field": "email", '
    '"equals": "{email}"}, for the other kinds. Checked against the source\'s kind when saved'
)
SOURCE_ID = "the data source it queries: an id from GET /integrations"
TRIGGERS = (
    "phrases that run it when a message holds one (case, accents and punctuation ignored); "
    "a write template needs at least one"
)
AUTO_MATCH = "also run it when a message is about the names its template mentions (reads only)"
CHANNELS_MEANING = "the channels it runs on; empty: every channel"
NAME = text_schema(MAX_NAME_CHARS)
SOURCE = described(SOURCE_ID, minimum=1, maximum=MAX_STORED_ID)
#: a trigger phrase, as ``check_triggers`` takes it: text with a word in it
TRIGGER = {"type": "string", "maxLength": MAX_TRIGGER_CHARS, "pattern": HAS_WORD}
#: an action that can run: one with a trigger phrase, or auto-matched (the default)
RUNNABLE = [
    {"properties": {"auto_match": {"const": True}}},
    {"required": ["triggers"], "properties": {"triggers": {"minItems": 1}}},
]


def check_name(value: Any) -> str:
    return check_text(value, "name", MAX_NAME_CHARS)


def check_source_id(value: int) -> int:
    if not 0 < value <= MAX_STORED_ID:
        raise InvalidInput("source_id", "must be the id of a data source: GET /integrations")
    return value


def check_template_value(value: Any) -> Any:
    """The template's JSON type; its content is checked against the source's kind."""
    if isinstance(value, str):
        if len(value) > MAX_TEMPLATE_CHARS:
            raise InvalidInput(FIELD, f"is longer than {MAX_TEMPLATE_CHARS} characters")
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidInput(FIELD, "must be text (SQL, a path, a search) or an object (a filter)")


def check_triggers(value: Any) -> tuple[str, ...]:
    """Each phrase text with a word in it, each once (case and accents aside)."""
    if not isinstance(value, list | tuple):
        raise InvalidInput("triggers", "must be a list of phrases")
    if len(value) > MAX_TRIGGERS:
        raise InvalidInput("triggers", f"has {len(value)} phrases; the limit is {MAX_TRIGGERS}")
    out: list[str] = []
    seen: set[str] = set()
    for item in value:
        phrase = check_text(item, "triggers", MAX_TRIGGER_CHARS)
        words = normal_words(phrase).strip()
        if not words or not any(char.isalnum() for char in phrase):  # HAS_WORD
            raise InvalidInput("triggers", f"{phrase[:40]!r} has no word a message could hold")
        if words not in seen:
            seen.add(words)
            out.append(phrase)
    return tuple(out)


def check_asking_channels(value: Any) -> tuple[str, ...]:
    """Channels from ``CHANNELS``, each once; none: every channel."""
    if not isinstance(value, list | tuple):
        raise InvalidInput("channels", f"must be a list of {', '.join(CHANNELS)}")
    out: list[str] = []
    for item in value:
        channel = check_channel(item, "channels")
        if channel not in out:
            out.append(channel)
    return tuple(out)


def check_channel(value: Any, field: str = "channel") -> str:
    channel = value.strip().lower() if isinstance(value, str) else ""
    if channel not in CHANNELS:
        shown = repr(value[:40]) if isinstance(value, str) else repr(value)
        raise InvalidInput(field, f"{shown} is not a channel: use {', '.join(CHANNELS)}")
    return channel


def check_description(value: str) -> str:
    if len(value) > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(
            "description", f"has {len(value)} characters; the limit is {MAX_DESCRIPTION_CHARS}"
        )
    return value.strip()


@attrs.frozen
class LiveActionFields:
    """An action as the owner sets it (``template`` as written)."""

    name: str
    source_id: int
    template: Any
    triggers: tuple[str, ...] = ()
    auto_match: bool = True
    channels: tuple[str, ...] = ()
    description: str = ""
    enabled: bool = True


@listing(read_only=READ_ONLY)
@attrs.frozen
class LiveActionPatch:
    """The fields to change; {} changes nothing. The action as changed is checked again:
    its template against the (new) source's kind, and it must still be able to run (a
    trigger phrase, or auto_match; a write template needs a trigger)."""

    name: Annotated[str | None, NAME] = unless_sent(check_name)
    source_id: Annotated[int | None, SOURCE] = unless_sent(check_source_id)
    template: Annotated[
        Any, described(TEMPLATE, type=["string", "object"], maxLength=MAX_TEMPLATE_CHARS)
    ] = unless_sent(
        check_template_value, "must be text (SQL, a path, a search) or an object (a filter)"
    )
    triggers: Annotated[
        tuple[Any, ...] | None, described(TRIGGERS, items=TRIGGER, maxItems=MAX_TRIGGERS)
    ] = unless_sent(check_triggers, "must be a list of phrases")
    auto_match: Annotated[bool | None, described(AUTO_MATCH)] = unless_sent()
    channels: Annotated[
        tuple[Any, ...] | None, described(CHANNELS_MEANING, items={"enum": list(CHANNELS)})
    ] = unless_sent(check_asking_channels, f"must be a list of {', '.join(CHANNELS)}")
    description: Annotated[
        str | None, described("what the data is, for the answer", maxLength=MAX_DESCRIPTION_CHARS)
    ] = unless_sent(check_description)
    enabled: Annotated[bool | None, described("false: kept, never run")] = unless_sent()

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self, recurse=False).items() if v is not None}


@whole(anyOf=RUNNABLE)
@attrs.frozen
class NewLiveAction:
    """Unknown and read-only fields are refused (422) by name. An action runs on a trigger
    phrase or auto-matched: one with neither is refused (422), as is a write template
    (UPDATE, INSERT or DELETE) without a trigger."""

    name: Annotated[str, NAME]
    source_id: Annotated[int, SOURCE]
    template: Annotated[
        Any, described(TEMPLATE, type=["string", "object"], maxLength=MAX_TEMPLATE_CHARS)
    ]
    triggers: Annotated[
        list[str], described(TRIGGERS, items=TRIGGER, maxItems=MAX_TRIGGERS, default=[])
    ] = attrs.field(factory=list)
    auto_match: Annotated[bool, described(AUTO_MATCH)] = True
    channels: Annotated[
        list[str], described(CHANNELS_MEANING, items={"enum": list(CHANNELS)}, default=[])
    ] = attrs.field(factory=list)
    description: Annotated[
        str, described("what the data is, for the answer", maxLength=MAX_DESCRIPTION_CHARS)
    ] = ""
    enabled: Annotated[bool, described("false: kept, never run")] = True


def check_patch(body: Mapping[str, Any]) -> LiveActionPatch:
    """A PATCH body: known fields only (unknown and read-only ones refused by name), each
    valid. ``{}`` changes nothing."""
    return structure_body(body, LiveActionPatch)


def check_new(body: Mapping[str, Any]) -> LiveActionFields:
    """A POST body: name, source_id and template required; the rest default."""
    given = check_patch(body).given()
    missing = [name for name in REQUIRED if name not in given]
    if missing:
        raise InvalidInput(", ".join(missing), f"{' and '.join(missing)} required")
    return LiveActionFields(**given)


def apply_patch(existing: LiveActionFields, patch: LiveActionPatch) -> LiveActionFields:
    return attrs.evolve(existing, **patch.given())


def switches_off(patch: LiveActionPatch) -> bool:
    """Whether ``patch`` turns the action off and changes nothing it runs with (template,
    source, triggers, auto_match): always allowed, so an action whose saved template no
    longer passes its check can be kept off until it is fixed. Turning it on checks it."""
    given = patch.given()
    runs_with = {"template", "source_id", "triggers", "auto_match"}
    return given.get("enabled") is False and not runs_with & given.keys()


def check_runnable(fields: LiveActionFields, kind: str) -> Template:
    """The action's template checked against its source's ``kind`` (``InvalidInput``
    naming ``template`` with the reason), and the action one that can run."""
    try:
        template = check_template(kind, fields.template)
    except InvalidInput as refused:
        if refused.field != FIELD:  # the source's kind takes no live query
            raise InvalidInput("source_id", refused.message) from None
        raise
    if template.writes and not fields.triggers:
        raise InvalidInput(
            "triggers",
            "a write template (UPDATE, INSERT or DELETE) runs only on a trigger phrase: "
            "writes are never auto-matched, so without one it would never run; add a "
            'phrase such as "cancel my order"',
        )
    if not fields.triggers and not fields.auto_match:
        raise InvalidInput(
            "triggers",
            "the action could never run: give a trigger phrase, or set auto_match to true",
        )
    return template


@attrs.frozen
class TemplateFacts:
    """What a saved template needs and does; ``error``: why it no longer passes its
    check (the rules grew stricter since it was saved), when it does not."""

    params: tuple[str, ...] = ()
    writes: bool = False
    error: str = ""


def template_facts(kind: str, template: Any) -> TemplateFacts:
    try:
        checked = check_template(kind, template)
    except InvalidInput as refused:
        return TemplateFacts(error=f"{refused.field}: {refused.message}")
    return TemplateFacts(tuple(checked.params), checked.writes)


@attrs.frozen
class LiveActionView:
    """A live-data action, with its source's name and kind and what its template needs."""

    id: int
    name: str
    source_id: int
    source_name: str
    source_type: Annotated[str, described(enum=list(SOURCE_TYPES))]
    template: Annotated[Any, described("as saved: text or an object")]
    params: Annotated[
        list[str], described("the placeholders the template uses: the values a run needs")
    ]
    writes: Annotated[bool, described("an UPDATE, INSERT or DELETE: runs on its triggers only")]
    triggers: list[str]
    auto_match: bool
    channels: Annotated[list[str], described(CHANNELS_MEANING, items={"enum": list(CHANNELS)})]
    description: str
    enabled: bool
    created_at: datetime
    updated_at: datetime
    template_error: Annotated[
        str, described("why the saved template no longer passes its check (it is not run)")
    ] = ""


@attrs.frozen
class LiveActions:
    live_actions: list[LiveActionView]


# --- the dry run ----------------------------------------------------------------------


def check_message(text: str) -> str:
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInput("message", f"is longer than {MAX_MESSAGE_CHARS} characters")
    return text


def check_identifier(text: str) -> str:
    if len(text) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput("user_identifier", f"is longer than {MAX_IDENTIFIER_CHARS} characters")
    return text


def _channel(value: str) -> str:
    return check_channel(value)


def _values(value: dict[str, str]) -> dict[str, str]:
    for name, text in value.items():
        if name not in PLACEHOLDERS:
            raise InvalidInput("values", f"unknown value {name[:40]!r}: use {_KNOWN}")
        check_text(text, "values", MAX_VALUE_CHARS)
    return {name: text.strip() for name, text in value.items()}


@listing(read_only=())
@attrs.frozen
class DryRun:
    """The values to run with: by name, or extracted from a message as a customer would
    write it (with who writes, for {caller}); a value given by name wins. Each
    placeholder of the action's template needs one (422 naming values otherwise)."""

    values: Annotated[
        dict[str, str],
        described(
            "the placeholders' values by name",
            propertyNames={"enum": list(PLACEHOLDERS)},
            additionalProperties={
                "type": "string",
                "maxLength": MAX_VALUE_CHARS,
                "pattern": NOT_BLANK,
            },
        ),
    ] = attrs.field(
        factory=dict,
        converter=_values,
        metadata=refusal('must be an object of text values by name, e.g. {"order_id": "4411"}'),
    )
    message: Annotated[str, described(maxLength=MAX_MESSAGE_CHARS)] = attrs.field(
        default="", converter=check_message
    )
    user_identifier: Annotated[
        str,
        described("who writes, as the channel says it ({caller})", maxLength=MAX_IDENTIFIER_CHARS),
    ] = attrs.field(default="", converter=check_identifier)
    channel: Annotated[str, described(enum=list(CHANNELS))] = attrs.field(
        default="chat", converter=_channel
    )


def check_dry_run(body: Mapping[str, Any]) -> DryRun:
    return structure_body(body, DryRun)


def dry_run_values(params: tuple[str, ...], request: DryRun) -> dict[str, str]:
    """The values ``params`` need, from ``request``: those given by name, else those its
    message holds (a bare number taken as the order number, as in a reply to the
    question for it) and ``{caller}`` from its user_identifier. InvalidInput naming
    ``values`` and each missing one otherwise."""
    found = extract(request.message, params).values(
        caller=caller_value(request.channel, request.user_identifier)
    )
    values = {**found, **request.values}
    missing = [name for name in params if not values.get(name)]
    if missing:
        names = ", ".join(missing)
        them = "it" if len(missing) == 1 else "them"
        raise InvalidInput(
            "values",
            f"missing {names}: the template needs {them}; give {them} in values, or in a "
            "message that holds {them}".replace("{them}", them),
        )
    return {name: values[name] for name in params}


def json_value(value: Any) -> Any:
    """A row's value as JSON: text, numbers, booleans, null, lists and objects as they
    are, anything else (a decimal, a date, bytes) as its text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


@attrs.frozen
class DryRunResult:
    """What the query answered: 200 even when the source failed (``failed``, with the
    source's ``reason``), so the owner sees why."""

    rows: Annotated[list[dict[str, Any]], described(maxItems=DRY_RUN_ROWS)]
    affected: Annotated[int | None, described("the rows a write would change")]
    duration_ms: int
    values: Annotated[dict[str, str], described("the values bound, by placeholder")]
    writes: bool
    failed: bool = False
    reason: str = ""


# --- the execution log ----------------------------------------------------------------


def dry_run(
    action: LiveAction, asked: DryRun
) -> Generator[RunLiveQuery | RecordLive, Any, DryRunResult]:
    """Run ``action`` now with the values ``asked`` gives (a write's transaction rolled
    back), and log the run with outcome ``dry_run``. The source failing, or the query
    failing unexpectedly, is a result too: the owner sees why."""
    template = action.template
    values = dry_run_values(tuple(template.params), asked)
    bound = tuple(sorted(values.items()))
    query = RunLiveQuery(action.id, action.source_id, action.kind, template, bound, dry_run=True)
    try:
        result: LiveRows | LiveFailure = yield query
    except Exception as error:  # its name only: a driver's message may hold the values
        result = LiveFailure(f"the query failed unexpectedly ({type(error).__name__})")
    if isinstance(result, LiveFailure):
        shown = DryRunResult(
            [], None, result.duration_ms, values, template.writes, True, result.reason
        )
        rows_count: int | None = None
    else:
        rows = [json_value(dict(row)) for row in result.rows[:DRY_RUN_ROWS]]
        shown = DryRunResult(rows, result.affected, result.duration_ms, values, template.writes)
        rows_count = len(result.rows)
    run = LiveRun(
        action.id,
        action.name,
        bound,
        "dry_run",
        rows_count,
        shown.affected,
        shown.duration_ms,
        shown.reason,
    )
    yield RecordLive(asked.channel, None, run)
    return shown


@attrs.frozen
class RunsQuery:
    limit: Annotated[int, described(minimum=1, maximum=MAX_RUNS_PAGE)] = 50
    before: Annotated[
        int,
        described(
            "only runs older than this run id (next_before of the page before); 0: the newest",
            minimum=0,
            maximum=MAX_STORED_ID,
        ),
    ] = 0
    action_id: Annotated[
        int,
        described("only this action's runs; 0: every action's", minimum=0, maximum=MAX_STORED_ID),
    ] = 0


@attrs.frozen
class LoggedRun:
    """One execution: the values never, only their HMAC (the same values, the same hash)."""

    id: int
    action_id: Annotated[int | None, described("null: the action was deleted since")]
    action_name: str
    channel: str
    values_hash: str
    row_count: int | None
    affected: int | None
    duration_ms: int
    outcome: Annotated[str, described(enum=list(OUTCOMES))]
    reason: str
    at: datetime


@attrs.frozen
class Runs:
    runs: list[LoggedRun]
    next_before: Annotated[
        int | None, described("pass as before= for the next (older) page; null: no more")
    ] = None
