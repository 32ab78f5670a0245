"""GET /status: what is set up and working, each part with the owner's next step.

The rules are here, as pure functions of plain facts (``StatusFacts``: the settings, the
providers the service runs, the last provider calls, what the database holds, taken at
``now``); ``ragio.http.status`` only gathers the facts. Each part is an item with a
``state`` (``STATES``), a ``summary`` in plain words and a ``next_step`` naming the
setting to set or the command to run (null when nothing is to be done). No item ever
says a setting's value, only its name: the keys, tokens and URLs stay where they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Literal

import attrs

from ragcore.api.service import Database, Embedder, Graph, Provider, RoleCaps, Spent, spending
from ragcore.channels.required import missing_settings
from ragcore.chat.fallback import Attempt, FailureKind
from ragcore.schema import described
from ragcore.settings import Settings, embedding_provider, voice_refusal
from ragcore.usage import Caps, Totals

State = Literal["ok", "missing", "failing", "off"]
#: what each state means, for the docs and the schema
STATES = (
    "ok: set up, and working as far as the service knows; "
    "missing: not set up, or set up in part, where the service needs it (a key, a setting, "
    "a first document): next_step says what to do; "
    "failing: set up, but its last try failed or it does not answer: next_step says what "
    "to check; "
    "off: not turned on, and the service works without it: next_step says how to turn it on"
)
StateField = Annotated[State, described(STATES)]
Outcome = Literal[
    "ok", "rate_limited", "unavailable", "timeout", "bad_key", "rejected", "bad_reply"
]
#: the settings of each provider: its key, its chat model, its embedding model
KEYS = {"genai": "GENAI_API_KEY", "openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
CHAT_MODELS = {
    "genai": "GENAI_CHAT_MODEL",
    "openai": "OPENAI_CHAT_MODEL",
    "anthropic": "ANTHROPIC_CHAT_MODEL",
}
EMBEDDING_MODELS = {"genai": "GENAI_EMBEDDING_MODEL", "openai": "OPENAI_EMBEDDING_MODEL"}
#: an item read from the database while it does not answer
DOWN = "Unknown: the database does not answer."
DOWN_STEP = "See the database item: this is read from the database."


# ---------------------------------------------------------------- what it answers


@attrs.frozen
class ProviderCall:
    """A provider's last call made by the process that answered: when it ended and how."""

    provider: str
    task: Annotated[str, described("answer, check, summary or embedding")]
    at: datetime
    outcome: Annotated[Outcome, described("ok, or how the provider failed")]
    http_status: Annotated[int | None, described("the provider's HTTP status, if any")] = None
    detail: Annotated[str | None, described("what failed, in the service's words")] = None

    @classmethod
    def of(cls, provider: str, task: str, at: datetime, failed: Attempt | None) -> ProviderCall:
        if failed is None:
            return cls(provider, task, at, "ok")
        outcome: Outcome = failed.failure.value  # FailureKind's words are Outcome's
        return cls(provider, task, at, outcome, failed.status, failed.describe())

    @property
    def failure(self) -> FailureKind | None:
        return None if self.outcome == "ok" else FailureKind(self.outcome)


@attrs.frozen
class StatusItem:
    """What every item says: its state, in plain words, and the next step."""

    title: str
    state: StateField
    summary: str
    next_step: Annotated[
        str | None,
        described(
            "what to do, naming the setting or the command (on an ok item, a hint when "
            "nothing has come in yet); null when nothing is to be done"
        ),
    ]


@attrs.frozen
class AnsweringItem(StatusItem):
    """The answering provider, its fallbacks, and their last calls (the primary first)."""

    provider: Provider
    fallbacks: list[Provider]
    last_calls: list[ProviderCall]


@attrs.frozen
class KnowledgeItem(StatusItem):
    """The embedder and what it embedded (null counts: the database did not answer)."""

    embedder: Embedder
    documents: int | None
    chunks: int | None
    last_call: ProviderCall | None


@attrs.frozen
class ChannelItem(StatusItem):
    """A text channel: ``configured`` when the settings it needs to answer are set,
    ``verified`` when its webhook requests can be verified (the webhook's secret, the
    auth token, the public key), and when the last message came in (of those the service
    keeps; null: none, or the database did not answer)."""

    configured: bool
    verified: bool
    last_message_at: datetime | None


@attrs.frozen
class WidgetItem(StatusItem):
    """The chat widget's sites (null: the database did not answer)."""

    sites: int | None
    enabled_sites: int | None


@attrs.frozen
class VoiceItem(StatusItem):
    """The phone channel, and when the last call began (null: none kept, or unknown)."""

    configured: bool
    verified: bool
    last_call_at: datetime | None


@attrs.frozen
class GraphItem(StatusItem):
    """The knowledge graph, as /health shows it."""

    graph: Graph


@attrs.frozen
class BudgetsItem(StatusItem):
    """The usage ledger and the caps, with what GET /usage counts against them (null: the
    database did not answer)."""

    ledger: bool
    today: Spent | None
    this_month: Spent | None
    role_caps: RoleCaps


@attrs.frozen
class SourcesItem(StatusItem):
    """Data sources or websites: how many, and those whose last sync (or crawl) failed
    (null count: the database did not answer)."""

    count: int | None
    failing: list[str]


@attrs.frozen
class DatabaseItem(StatusItem):
    """The database, as /health shows it."""

    database: Database


@attrs.frozen
class StatusItems:
    """Each part of the service, in the order a status page shows them."""

    answering: AnsweringItem
    knowledge: KnowledgeItem
    telegram: ChannelItem
    whatsapp: ChannelItem
    discord: ChannelItem
    widget: WidgetItem
    voice: VoiceItem
    graph: GraphItem
    budgets: BudgetsItem
    data_sources: SourcesItem
    websites: SourcesItem
    database: DatabaseItem


@attrs.frozen
class Status:
    """What is set up and working: each part with its state and the next step."""

    state: Annotated[
        Literal["ok", "missing", "failing"],
        described("failing when any item is, else missing when any item is, else ok"),
    ]
    checked_at: datetime
    items: StatusItems


# ---------------------------------------------------------------- what it is made from


@attrs.frozen
class StatusCounts:
    """What the database holds, for the items that read it."""

    documents: int = 0
    chunks: int = 0
    widget_sites: int = 0
    enabled_widget_sites: int = 0
    data_sources: int = 0
    failing_data_sources: tuple[str, ...] = ()
    websites: int = 0
    failing_websites: tuple[str, ...] = ()
    #: channel -> when its last message came in (the channels with one kept)
    last_messages: Mapping[str, datetime] = attrs.field(factory=dict)
    last_call_at: datetime | None = None  # the last phone call's start
    totals: Totals = Totals()


@attrs.frozen
class StatusFacts:
    """Everything the status is made from. ``chain``: the answering providers the service
    runs, the primary first; ``calls``: the last call to each provider, by ``(use,
    provider)`` with use ``answering`` or ``embedding``; ``counts``: None when the
    database did not answer; ``messages_kept_days``: how long the channels' deliveries
    are kept."""

    settings: Settings
    now: datetime
    chain: Sequence[Provider]
    embedder: Embedder
    database: Database
    graph: Graph
    calls: Mapping[tuple[str, str], ProviderCall]
    counts: StatusCounts | None
    messages_kept_days: int = 30


def status(facts: StatusFacts) -> Status:
    """Every item, and the state of the whole."""
    items = StatusItems(
        answering=answering(facts),
        knowledge=knowledge(facts),
        telegram=telegram(facts),
        whatsapp=whatsapp(facts),
        discord=discord(facts),
        widget=widget(facts),
        voice=voice(facts),
        graph=graph(facts.graph),
        budgets=budgets(facts.settings, facts.counts),
        data_sources=data_sources(facts.settings, facts.counts),
        websites=websites(facts.counts),
        database=database(facts.database),
    )
    states = {getattr(items, field.name).state for field in attrs.fields(StatusItems)}
    whole: Literal["ok", "missing", "failing"] = (
        "failing" if "failing" in states else "missing" if "missing" in states else "ok"
    )
    return Status(whole, facts.now, items)


# ---------------------------------------------------------------- the providers


def answering(facts: StatusFacts) -> AnsweringItem:
    settings, chain = facts.settings, list(facts.chain)
    primary, fallbacks = chain[0], chain[1:]
    calls = [c for p in chain if (c := facts.calls.get(("answering", p.name))) is not None]
    title = "Answering"

    def item(state: State, summary: str, next_step: str | None) -> AnsweringItem:
        return AnsweringItem(title, state, summary, next_step, primary, fallbacks, calls)

    also = f" Fallbacks, in order: {', '.join(p.name for p in fallbacks)}." if fallbacks else ""
    if primary.name == "extractive":
        summary = (
            "No language model is set up: the service still answers, offline, with the "
            "passages of your documents that best match each question (extractive answers)."
        )
        if settings.llm_provider == "extractive":
            step = (
                "LLM_PROVIDER=extractive keeps the answers offline: set it to genai, openai or "
                "anthropic (with that provider's key), or unset it, and restart the service."
            )
        else:
            step = (
                "Set a provider's key and restart the service: GENAI_API_KEY (Gemini), "
                "OPENAI_API_KEY (OpenAI) or ANTHROPIC_API_KEY (Claude). For Ollama, vLLM or "
                "another OpenAI-compatible server, set OPENAI_BASE_URL (and LLM_PROVIDER=openai "
                "when it needs no key)."
            )
        return item("missing", summary + also, step)
    summary = f"Answers come from {primary.name} ({primary.model})."
    failing = [c for c in calls if c.failure is not None]
    if failing:
        first = failing[0]
        said = f" The last call to {first.provider}, {_when(first.at)}, failed: {first.detail}."
        rescued = [c for c in calls if c.failure is None and c.at >= first.at]
        if rescued:
            said += f" {rescued[0].provider} answered instead."
        step = provider_step(settings, first, CHAT_MODELS)
        return item("failing", summary + said + also, step)
    last = max(calls, key=lambda c: c.at, default=None)
    if last is None:
        said = " No call yet since this process started."
    else:
        said = f" Last call: {last.provider}, {_when(last.at)}, answered."
    return item("ok", summary + said + also, None)


def provider_step(settings: Settings, call: ProviderCall, models: Mapping[str, str]) -> str:
    """What to check after ``call`` failed: by how it failed, naming the provider's own
    settings (``models``: the chat or the embedding models' settings). An answering
    provider may have a fallback (LLM_FALLBACK_PROVIDERS); the embedder has none."""
    name = call.provider
    key, model = KEYS.get(name), models.get(name)
    failure = call.failure
    compatible = name == "openai" and bool(settings.openai_base_url)
    fallback = models is CHAT_MODELS
    if failure is FailureKind.BAD_KEY and key:
        allowed = f", allowed the model {model} names" if model else ""
        return f"{name} refused its key: check {key} (a valid key{allowed}) and restart."
    if failure is FailureKind.RATE_LIMITED:
        other = ", or name another provider in LLM_FALLBACK_PROVIDERS" if fallback else ""
        return (
            f"{name} is limiting the requests (a rate limit or a used-up quota): wait, or "
            f"raise the account's limits with {name}{other}."
        )
    if failure is FailureKind.UNAVAILABLE:
        where = "the server at OPENAI_BASE_URL" if compatible else f"{name}'s status page"
        other = (
            "; LLM_FALLBACK_PROVIDERS can name a provider to answer meanwhile" if fallback else ""
        )
        return (
            f"{name} could not be reached or had a server error: check {where} and this "
            f"host's network{other}."
        )
    if failure is FailureKind.TIMEOUT:
        return (
            f"{name} did not answer within PROVIDER_TIMEOUT_SECONDS "
            f"({settings.provider_timeout_seconds:g} s): raise it for a slow model, or check "
            "that the provider is up."
        )
    if failure is FailureKind.REJECTED and model:
        return (
            f"{name} rejected the request: check the model name in {model} and MAX_OUTPUT_TOKENS."
        )
    if failure is FailureKind.BAD_REPLY and model:
        server = "OPENAI_BASE_URL points at an OpenAI-compatible server and " if compatible else ""
        return (
            f"{name} answered with a reply its API does not promise: check that {server}"
            f"{model} names the right model."
        )
    return f"{name} failed ({call.outcome}): the service's log says more."


def knowledge(facts: StatusFacts) -> KnowledgeItem:
    embedder, counts = facts.embedder, facts.counts
    call = facts.calls.get(("embedding", embedder.name))
    documents = counts.documents if counts is not None else None
    chunks = counts.chunks if counts is not None else None
    title = "Knowledge base"

    def item(state: State, summary: str, next_step: str | None) -> KnowledgeItem:
        return KnowledgeItem(title, state, summary, next_step, embedder, documents, chunks, call)

    made = f"Embedded by {embedder.name} ({embedder.model}, {embedder.dimensions} dimensions)."
    preferred = embedding_provider(facts.settings)
    if preferred != embedder.name:
        made += (
            f" The settings prefer {preferred}; the stored chunks keep {embedder.name} until "
            f"EMBEDDING_PROVIDER={preferred} and `ragchat reindex` move them."
        )
    if counts is None:
        return item("failing", f"{DOWN} {made}", DOWN_STEP)
    if call is not None and call.failure is not None:
        said = f"The last embedding call, {_when(call.at)}, failed: {call.detail}. {made}"
        return item("failing", said, provider_step(facts.settings, call, EMBEDDING_MODELS))
    if counts.documents == 0:
        return item(
            "missing",
            f"No documents yet: answers have nothing to quote. {made}",
            "Upload a document: the console's Documents page, POST /documents, or "
            "`ragchat ingest FILE_OR_FOLDER` (a website: `ragchat crawl URL`).",
        )
    held = f"{_count(counts.documents, 'document')} in {_count(counts.chunks, 'chunk')}."
    return item("ok", f"{held} {made}", None)


# ---------------------------------------------------------------- the channels


def _last_message(facts: StatusFacts, channel: str) -> datetime | None:
    return facts.counts.last_messages.get(channel) if facts.counts is not None else None


def _heard(facts: StatusFacts, at: datetime | None) -> str:
    if facts.counts is None:
        return " When the last message came in is unknown: the database does not answer."
    if at is None:
        return f" No message came in the last {facts.messages_kept_days} days."
    return f" Last message {_when(at)}."


def telegram(facts: StatusFacts) -> ChannelItem:
    settings = facts.settings
    token, secret = bool(settings.telegram_bot_token), bool(settings.telegram_webhook_secret)
    unsigned = settings.telegram_allow_unsigned
    at = _last_message(facts, "telegram")
    title = "Telegram"

    def item(state: State, summary: str, next_step: str | None) -> ChannelItem:
        return ChannelItem(title, state, summary, next_step, token and secret, secret, at)

    if not (token or secret or unsigned):
        return item(
            "off",
            "Not set up.",
            "To answer on Telegram: create a bot with @BotFather, set TELEGRAM_BOT_TOKEN and "
            "TELEGRAM_WEBHOOK_SECRET, restart the service, then run `ragchat telegram "
            "set-webhook` (docs/operations.md, Telegram).",
        )
    missing = missing_settings(settings, "telegram", "set-webhook")
    if missing:
        why = []
        if not token:
            why.append("TELEGRAM_BOT_TOKEN is not set: no message can be answered")
        if not secret:
            why.append(
                "TELEGRAM_WEBHOOK_SECRET is not set: "
                + ("updates come in unverified" if unsigned else "every update is refused (403)")
            )
        return item(
            "missing",
            "; ".join(why) + "." + _heard(facts, at),
            f"Set {' and '.join(missing)}, restart the service, then run `ragchat telegram "
            "set-webhook`.",
        )
    summary = "Set up: the bot's token and the webhook's secret are set." + _heard(facts, at)
    if unsigned:
        return item(
            "missing",
            summary + " TELEGRAM_ALLOW_UNSIGNED=true lets in updates without the secret.",
            "Set TELEGRAM_ALLOW_UNSIGNED=false (it is for local testing only) and restart.",
        )
    step = None
    if at is None and facts.counts is not None:
        step = (
            "If Telegram does not send messages here yet, run `ragchat telegram set-webhook` "
            "(with PUBLIC_BASE_URL set, or the webhook's https URL)."
        )
    return item("ok", summary, step)


def whatsapp(facts: StatusFacts) -> ChannelItem:
    settings = facts.settings
    wanted = bool(settings.telco_account_sid or settings.whatsapp_from_number)
    signed = bool(settings.telco_auth_token)
    unsigned = settings.whatsapp_allow_unsigned
    missing = missing_settings(settings, "whatsapp", "reply")
    at = _last_message(facts, "whatsapp")
    title = "WhatsApp"

    def item(state: State, summary: str, next_step: str | None) -> ChannelItem:
        return ChannelItem(title, state, summary, next_step, not missing, signed, at)

    webhook = "point the WhatsApp sender's incoming messages at PUBLIC_BASE_URL + /webhook/whatsapp"
    if not (wanted or unsigned):
        return item(
            "off",
            "Not set up.",
            "To answer on WhatsApp (through Twilio): set TELCO_ACCOUNT_SID, TELCO_AUTH_TOKEN "
            f"and PUBLIC_BASE_URL, restart the service, and {webhook} (docs/operations.md, "
            "WhatsApp).",
        )
    if missing:
        return item(
            "missing",
            f"{' and '.join(missing)} not set: messages cannot be "
            + ("answered." if signed or unsigned else "verified (403) or answered.")
            + _heard(facts, at),
            f"Set {' and '.join(missing)} and restart the service.",
        )
    summary = "Set up: the account and its auth token are set." + _heard(facts, at)
    if unsigned:
        return item(
            "missing",
            summary + " WHATSAPP_ALLOW_UNSIGNED=true lets in unsigned requests.",
            "Set WHATSAPP_ALLOW_UNSIGNED=false (it is for local testing only) and restart.",
        )
    step = None
    if at is None and facts.counts is not None:
        step = f"If no message comes in, {webhook}"
        if not settings.public_base_url:
            step += ", and set PUBLIC_BASE_URL: the signature covers the URL Twilio calls"
        step += "."
    return item("ok", summary, step)


def discord(facts: StatusFacts) -> ChannelItem:
    settings = facts.settings
    key = bool(settings.discord_public_key)
    wanted = bool(key or settings.discord_application_id or settings.discord_bot_token)
    at = _last_message(facts, "discord")
    title = "Discord"

    def item(state: State, summary: str, next_step: str | None) -> ChannelItem:
        return ChannelItem(title, state, summary, next_step, key, key, at)

    register = "run `ragchat discord register-command`"
    if not wanted:
        return item(
            "off",
            "Not set up.",
            "To answer on Discord: set DISCORD_PUBLIC_KEY, DISCORD_APPLICATION_ID and "
            "DISCORD_BOT_TOKEN, restart the service, set the application's Interactions "
            f"Endpoint URL to PUBLIC_BASE_URL + /webhook/discord, then {register} "
            "(docs/operations.md, Discord).",
        )
    if not key:
        return item(
            "missing",
            "DISCORD_PUBLIC_KEY is not set: every interaction is refused (401)."
            + _heard(facts, at),
            "Set DISCORD_PUBLIC_KEY (the application's public key) and restart the service.",
        )
    summary = "Set up: interactions are verified with the application's public key."
    step = None
    if at is None and facts.counts is not None:
        unset = missing_settings(settings, "discord", "register-command")
        first = f"set {' and '.join(unset)}, then " if unset else ""
        step = (
            "If /ask does not show in your server yet: set the Interactions Endpoint URL to "
            f"PUBLIC_BASE_URL + /webhook/discord, {first}{register}."
        )
    return item("ok", summary + _heard(facts, at), step)


def widget(facts: StatusFacts) -> WidgetItem:
    counts = facts.counts
    sites = counts.widget_sites if counts is not None else None
    enabled = counts.enabled_widget_sites if counts is not None else None
    title = "Chat widget"

    def item(state: State, summary: str, next_step: str | None) -> WidgetItem:
        return WidgetItem(title, state, summary, next_step, sites, enabled)

    if counts is None:
        return item("failing", DOWN, DOWN_STEP)
    if counts.widget_sites == 0:
        return item(
            "off",
            "No website has the chat widget yet.",
            "To put the chat on your website: add the site with POST /widget/sites (or "
            "`ragchat sites add NAME --origin https://your-site`), then put its script tag "
            "on your pages (docs/widget.md).",
        )
    total = _count(counts.widget_sites, "site")
    if counts.enabled_widget_sites == 0:
        return item(
            "off",
            f"{total}, none enabled: the widget answers nowhere.",
            "Enable a site: PATCH /widget/sites/{id} with enabled: true, or "
            "`ragchat sites enable ID`.",
        )
    return item("ok", f"{counts.enabled_widget_sites} of {total} enabled.", None)


def voice(facts: StatusFacts) -> VoiceItem:
    settings = facts.settings
    key, signed = bool(settings.voiceai_api_key), bool(settings.telco_auth_token)
    unsigned = settings.voice_allow_unsigned
    counts = facts.counts
    at = counts.last_call_at if counts is not None else None
    title = "Voice"

    def item(state: State, summary: str, next_step: str | None) -> VoiceItem:
        return VoiceItem(title, state, summary, next_step, key, signed, at)

    webhook = "point your Twilio number's voice webhook at PUBLIC_BASE_URL + /webhook/voice"
    if not key:
        return item(
            "off",
            "Not set up: no phone call is answered.",
            "To answer phone calls: set VOICEAI_API_KEY (the speech provider's, Deepgram) and "
            f"TELCO_AUTH_TOKEN, restart the service, and {webhook} (docs/operations.md, Voice).",
        )
    if not signed and not unsigned:
        return item(
            "missing",
            "TELCO_AUTH_TOKEN is not set: every call's webhook is refused (403).",
            "Set TELCO_AUTH_TOKEN (the telephony account's auth token) and restart.",
        )
    refusal = voice_refusal(settings)
    if refusal is not None:
        return item("missing", f"The voice server does not start: {refusal}.", f"{refusal}.")
    if facts.database.embedded:
        where = "`ragchat serve` runs the voice server beside the API (VOICE_BIND, VOICE_PORT)."
    else:
        where = (
            "The voice server runs as its own process: `ragchat voice`, on the same "
            "DATABASE_URL (this service cannot see whether it runs)."
        )
    if counts is None:
        heard = " When the last call came is unknown: the database does not answer."
    elif at is None:
        heard = " No call kept."
    else:
        heard = f" Last call {_when(at)}."
    summary = f"Set up. {where}{heard}"
    if unsigned:
        return item(
            "missing",
            summary + " VOICE_ALLOW_UNSIGNED=true lets in unsigned calls and media streams.",
            "Set VOICE_ALLOW_UNSIGNED=false (it is for local testing only) and restart.",
        )
    step = f"If calls do not reach the service, {webhook}." if at is None and counts else None
    return item("ok", summary, step)


# ---------------------------------------------------------------- the rest


def graph(shown: Graph) -> GraphItem:
    title = "Knowledge graph"
    if shown.status == "off":
        return GraphItem(
            title,
            "off",
            "Off: answers come from hybrid search alone.",
            "Optional: GRAPH_ENABLED=true (in the service's PostgreSQL) or GRAPH_URI (Neo4j) "
            "turns it on at the next start; docs/graph.md says when it helps.",
            shown,
        )
    if shown.status == "degraded":
        check = (
            "Check that Neo4j at GRAPH_URI answers and that GRAPH_USER and GRAPH_PASSWORD are "
            "right; the store is tried again 30 s after a failure."
            if shown.store == "neo4j"
            else "See the database item and the service's log; the store is tried again 30 s "
            "after a failure."
        )
        said = f"Its store ({shown.store}) fails: {shown.reason}. Answers go on without it."
        return GraphItem(title, "failing", said, check, shown)
    return GraphItem(title, "ok", f"On, in {shown.store}.", None, shown)


def budgets(settings: Settings, counts: StatusCounts | None) -> BudgetsItem:
    caps = Caps.from_settings(settings)
    today, month, role_caps = spending(caps, counts.totals if counts is not None else Totals())
    ledger = settings.usage_ledger
    known = counts is not None
    title = "Budgets"

    def item(state: State, summary: str, next_step: str | None) -> BudgetsItem:
        day, this_month = (today, month) if known else (None, None)
        return BudgetsItem(title, state, summary, next_step, ledger, day, this_month, role_caps)

    if not ledger:
        return item(
            "off",
            "Tokens are not counted (USAGE_LEDGER=false), so no budget applies.",
            "To count the tokens spent (GET /usage) and cap them: set USAGE_LEDGER=true, and "
            "BUDGET_DAILY_TOKENS or BUDGET_MONTHLY_TOKENS (per role: BUDGET_ROLE_DAILY_TOKENS, "
            "BUDGET_ROLE_MONTHLY_TOKENS), then restart.",
        )
    if not known:
        return item("failing", DOWN, DOWN_STEP)
    spent = f"Today {_spent(today)}, this month {_spent(month)}."
    roles = " Per-role caps apply too." if _role_caps(caps) else ""
    limited = "answers say that the usage limit is reached, without calling the provider"
    if today.cap is not None and today.tokens >= today.cap:
        return item(
            "failing",
            f"{spent} Today's cap is reached: {limited}, until the next UTC day.{roles}",
            "Raise BUDGET_DAILY_TOKENS and restart, or wait for the next UTC day.",
        )
    if month.cap is not None and month.tokens >= month.cap:
        return item(
            "failing",
            f"{spent} This month's cap is reached: {limited}, until the next UTC month.{roles}",
            "Raise BUDGET_MONTHLY_TOKENS and restart, or wait for the next UTC month.",
        )
    if not caps.any:
        return item("ok", f"{spent} No cap is set.", None)
    return item("ok", spent + roles, None)


def data_sources(settings: Settings, counts: StatusCounts | None) -> SourcesItem:
    title = "Data sources"
    if counts is None:
        return SourcesItem(title, "failing", DOWN, DOWN_STEP, None, [])
    count, failing = counts.data_sources, list(counts.failing_data_sources)

    def item(state: State, summary: str, next_step: str | None) -> SourcesItem:
        return SourcesItem(title, state, summary, next_step, count, failing)

    if count == 0:
        key = (
            ""
            if settings.addon_encryption_key
            else " It needs ADDON_ENCRYPTION_KEY set first: `ragchat keygen` makes one."
        )
        return item(
            "off",
            "No data source: answers come from the documents alone.",
            "To answer from your own systems (orders, customers): add a data source with "
            f"POST /integrations (docs/api.md, Data sources).{key}",
        )
    if not settings.addon_encryption_key:
        return item(
            "missing",
            f"{_count(count, 'data source')}, but ADDON_ENCRYPTION_KEY is not set: their "
            "credentials cannot be read.",
            "Set ADDON_ENCRYPTION_KEY to the key they were stored with, and restart.",
        )
    if failing:
        return item(
            "failing",
            f"The last sync failed for {len(failing)} of {_count(count, 'data source')}: "
            f"{', '.join(failing)}.",
            "See each one's sync_error in GET /integrations, put it right, then sync it again: "
            "POST /integrations/{id}/sync, or `ragchat sync ID`.",
        )
    return item("ok", f"{_count(count, 'data source')}; no sync failed.", None)


def websites(counts: StatusCounts | None) -> SourcesItem:
    title = "Websites"
    if counts is None:
        return SourcesItem(title, "failing", DOWN, DOWN_STEP, None, [])
    count, failing = counts.websites, list(counts.failing_websites)

    def item(state: State, summary: str, next_step: str | None) -> SourcesItem:
        return SourcesItem(title, state, summary, next_step, count, failing)

    if count == 0:
        return item(
            "off",
            "No website is crawled into documents.",
            "To answer from your website's pages: `ragchat crawl https://your-site/`, or "
            "POST /websites then POST /websites/{id}/crawl.",
        )
    if failing:
        return item(
            "failing",
            f"The last crawl of {len(failing)} of {_count(count, 'website')} had pages that "
            f"failed: {', '.join(failing)}.",
            "See which pages failed and why in GET /websites/{id}/pages, put it right, then "
            "crawl again: POST /websites/{id}/crawl, or `ragchat crawl ID`.",
        )
    return item("ok", f"{_count(count, 'website')}; no page failed in the last crawls.", None)


def database(shown: Database) -> DatabaseItem:
    title = "Database"
    kind = (
        "The embedded PostgreSQL, under DATA_DIR"
        if shown.embedded
        else "PostgreSQL at DATABASE_URL"
    )
    if shown.reachable:
        return DatabaseItem(title, "ok", f"{kind}: it answers.", None, shown)
    check = (
        "See the service's log (a full disk under DATA_DIR, a stopped server), and restart "
        "the service."
        if shown.embedded
        else "Check that the PostgreSQL server DATABASE_URL names is up and reachable from "
        "this host, and that its credentials are right."
    )
    return DatabaseItem(title, "failing", f"{kind}: it does not answer.", check, shown)


# ---------------------------------------------------------------- words


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def _spent(spent: Spent) -> str:
    tokens = f"{spent.tokens:,} token" + ("" if spent.tokens == 1 else "s")
    return tokens if spent.cap is None else f"{tokens} of {spent.cap:,}"


def _role_caps(caps: Caps) -> bool:
    return bool(
        caps.role_daily
        or caps.role_monthly
        or any(t for _, t in caps.role_daily_overrides)
        or any(t for _, t in caps.role_monthly_overrides)
    )
