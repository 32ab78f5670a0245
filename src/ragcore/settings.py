"""Settings: every variable the service reads, parsed by one pure function.

The table ``SETTINGS`` is the single source of truth: ``load_settings`` parses a
mapping (the environment merged over an optional ``.env``) with it, and
``.env.example`` and the docs are checked against it. ``Settings`` declares the same
fields with their types, so a type checker sees them; it cannot drift from the table
(its names are checked at import, its types by a test). Every bad variable is
reported at once, each naming itself, so an operator fixes them in one go.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs

from ragcore.language import NAMES as DETECTABLE_LANGUAGES

LLM_PROVIDERS = ("genai", "openai", "anthropic", "extractive")
EMBEDDING_PROVIDERS = ("genai", "openai", "local")
LOG_FORMATS = ("text", "json")
GRAPH_ENABLED_CHOICES = ("auto", "true", "false")
#: the schemes of the Neo4j driver's URIs (+s: TLS checked, +ssc: self-signed accepted)
GRAPH_URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
_IDENTIFIER = re.compile(r"^[a-z0-9_-]{1,64}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ValueError):
    """One or more variables were bad; ``problems`` holds one line per variable."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid settings:\n" + "\n".join(f"  - {p}" for p in problems))


class _Bad(ValueError):
    pass


VALUE_HIDDEN = "(the value is not shown: it is a secret)"

Parser = Callable[[str], Any]
P = TypeVar("P", bound=Parser)


def _needs(requirement: str) -> Callable[[P], P]:
    """Give a parser the fixed words of what it takes (``must be an https:// URL``).

    A bad secret is reported with these words alone: they are written before any value
    is seen, so no part of a secret can reach the message, whatever the parser's own
    message would have quoted.
    """

    def mark(parse: P) -> P:
        parse.requirement = requirement  # type: ignore[attr-defined]
        return parse

    return mark


# ---------------------------------------------------------------- parsers
# Each parser takes the raw string (never empty: blank means "default") and
# returns the typed value or raises _Bad with a message that says what to change.
# A parser a secret setting uses says what it takes with @_needs (a test checks it):
# its message may quote the value, and for a secret only the requirement is shown.


def _text(raw: str) -> str:
    return raw


def _integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise _Bad(f"must be a whole number, got {raw!r}") from None
        if minimum is not None and value < minimum:
            raise _Bad(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise _Bad(f"must be at most {maximum}, got {value}")
        return value

    return parse


def _number(minimum: float, maximum: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise _Bad(f"must be a number, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise _Bad(f"must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def _boolean(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise _Bad(f"must be true or false, got {raw!r}")


def _folder_or_off(raw: str) -> str:
    """A folder, or ``off`` (kept as ""): a blank value means the default."""
    folder = raw.strip()
    return "" if folder.lower() == "off" else folder


def _items(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _networks(raw: str) -> tuple[str, ...]:
    """Addresses and networks (``10.0.0.0/8``), each checked, as written."""
    found = []
    for item in _items(raw):
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise _Bad(f"{item!r} is not an IP address or network (such as 10.0.0.0/8)") from None
        found.append(item)
    return tuple(found)


def _graph_uri(raw: str) -> str:
    value = raw.strip()
    scheme, separator, rest = value.partition("://")
    if not separator or scheme.lower() not in GRAPH_URI_SCHEMES or not rest.strip("/"):
        raise _Bad(
            f"must be a Neo4j URI like bolt://host:7687 (schemes: {', '.join(GRAPH_URI_SCHEMES)})"
        )
    if "@" in rest.split("/", 1)[0]:
        raise _Bad("must not hold credentials: set GRAPH_USER and GRAPH_PASSWORD")
    return f"{scheme.lower()}://{rest}"


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in options:
            raise _Bad(f"unknown {raw!r}; choose one of {', '.join(options)}")
        return value

    return parse


def _choices(options: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    def parse(raw: str) -> tuple[str, ...]:
        values = tuple(item.lower() for item in _items(raw))
        unknown = [v for v in values if v not in options]
        if unknown:
            raise _Bad(f"unknown {', '.join(unknown)}; choose from {', '.join(options)}")
        return values

    return parse


def _languages(raw: str) -> tuple[str, ...]:
    values = tuple(item.lower() for item in _items(raw))
    bad = [v for v in values if v not in DETECTABLE_LANGUAGES]
    if bad:
        raise _Bad(
            f"{', '.join(bad)}: not an ISO 639-1 code of a detectable language such as en, de or fr"
        )
    return values


def _language(raw: str) -> str:
    value = raw.strip().lower()
    if not _LANGUAGE.match(value):
        raise _Bad(f"{raw!r} is not an ISO 639-1 code such as en, de or fr")
    return value


@_needs("must be an https:// URL with a host, such as https://hooks.example.com/…")
def _https_url(raw: str) -> str:
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname:
        raise _Bad(f"must be an https:// URL, got {value!r}")
    return value


@_needs("must be an http:// or https:// URL with a host")
def _http_url(raw: str) -> str:
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _Bad(f"must be an http:// or https:// URL, got {value!r}")
    return value


@_needs("must be a postgresql:// URL, e.g. postgresql://user:pass@localhost:5432/ragchat")
def _database_url(raw: str) -> str:
    value = raw.strip()
    if urlsplit(value).scheme not in ("postgresql", "postgres"):
        raise _Bad(
            "must be a postgresql:// URL, e.g. postgresql://user:pass@localhost:5432/ragchat"
        )
    return value


@_needs(
    "must be comma-separated name=https://… pairs, each name once, of lowercase letters, "
    "digits, _ and - (e.g. crm=https://crm.example.com/in)"
)
def _named_https_targets(raw: str) -> tuple[tuple[str, str], ...]:
    targets: list[tuple[str, str]] = []
    for pair in _items(raw):
        name, sep, url = pair.partition("=")
        name = name.strip()
        if not sep or not name or not url.strip():
            raise _Bad(f"{pair!r} is not a name=https://… pair")
        if not _IDENTIFIER.match(name):
            raise _Bad(f"target name {name!r} must be lowercase letters, digits, _ or -")
        if any(existing == name for existing, _ in targets):
            raise _Bad(f"target name {name!r} appears twice")
        try:
            targets.append((name, _https_url(url)))
        except _Bad as bad:
            raise _Bad(f"target {name!r} {bad}") from None
    return tuple(targets)


def _role_tokens(raw: str) -> tuple[tuple[str, int], ...]:
    pairs: list[tuple[str, int]] = []
    for pair in _items(raw):
        role, sep, tokens = pair.partition("=")
        role = role.strip().lower()
        if not sep or not _IDENTIFIER.match(role):
            raise _Bad(f"{pair!r} is not a role=<tokens> pair")
        try:
            pairs.append((role, _integer(minimum=0)(tokens)))
        except _Bad as bad:
            raise _Bad(f"role {role!r} tokens {bad}") from None
    return tuple(pairs)


def _roles(raw: str) -> tuple[str, ...]:
    values = tuple(item.lower() for item in _items(raw))
    bad = [v for v in values if not _IDENTIFIER.match(v)]
    if bad:
        raise _Bad(f"{', '.join(bad)}: role names are lowercase letters, digits, _ or -")
    return values


def _recipients(raw: str) -> tuple[str, ...]:
    values = tuple(item.lower() for item in _items(raw))
    for value in values:
        local, at, domain = value.rpartition("@")
        if not at or "." not in domain or " " in value:
            raise _Bad(f"{value!r} is neither an address nor an @domain entry")
    return values


def _email(raw: str) -> str:
    value = raw.strip()
    local, at, domain = value.rpartition("@")
    if not local or not at or "." not in domain:
        raise _Bad(f"{value!r} is not an email address")
    return value


@_needs("must be a Fernet key (32 url-safe base64 bytes); `ragchat keygen` prints one")
def _fernet_key(raw: str) -> str:
    value = raw.strip()
    try:
        decoded = base64.urlsafe_b64decode(value.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        decoded = b""
    if len(decoded) != 32:
        raise _Bad("must be a Fernet key (32 url-safe base64 bytes); `ragchat keygen` prints one")
    return value


#: WORKFLOW_SIGNING_SECRET in the Standard Webhooks form: this prefix, then the key in base64
SECRET_PREFIX = "whsec_"  # noqa: S105 - the standard prefix, not a secret
MIN_KEY_BYTES = 16


def signing_key(secret: str) -> bytes:
    """The HMAC key of a WORKFLOW_SIGNING_SECRET; ValueError saying what to change."""
    value = secret.strip()
    if value.startswith(SECRET_PREFIX):
        encoded = value[len(SECRET_PREFIX) :]
        try:
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(
                f"{SECRET_PREFIX}… must be followed by base64 (e.g. whsec_ and the output of "
                "`openssl rand -base64 32`)"
            ) from None
    else:
        key = value.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(
            f"is {len(key)} bytes; use at least {MIN_KEY_BYTES} (Standard Webhooks "
            "secrets are 24 to 64 random bytes, e.g. whsec_ and `openssl rand -base64 32`)"
        )
    return key


@_needs(
    f"must be whsec_ followed by base64, or text, of at least {MIN_KEY_BYTES} bytes (e.g. "
    "whsec_ and the output of `openssl rand -base64 32`)"
)
def _signing_secret(raw: str) -> str:
    try:
        signing_key(raw)
    except ValueError as bad:
        raise _Bad(str(bad)) from None
    return raw.strip()


@_needs("must use letters and digits only, because it is placed in a URL")
def _alphanumeric(raw: str) -> str:
    if not raw.isascii() or not raw.isalnum():
        raise _Bad("must use letters and digits only, because it is placed in a URL")
    return raw


def _bind_address(raw: str) -> str:
    value = raw.strip()
    if value == "localhost":
        return value
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise _Bad(f"must be an IP address such as 127.0.0.1 or 0.0.0.0, got {value!r}") from None
    return value


def _pattern(pattern: str, what: str) -> Callable[[str], str]:
    """A value that must match ``pattern`` (these go into URLs and headers verbatim)."""
    compiled = re.compile(pattern)

    @_needs(f"must be {what}")
    def parse(raw: str) -> str:
        value = raw.strip()
        if not compiled.match(value):
            raise _Bad(f"must be {what}")
        return value

    return parse


def _base_url(raw: str) -> str:
    value = _http_url(raw).rstrip("/")
    if urlsplit(value).query or urlsplit(value).fragment:
        raise _Bad(f"must be a URL without ?query or #fragment, got {value!r}")
    return value


def _stream_url(raw: str) -> str:
    value = raw.strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise _Bad(f"must be a wss:// (or ws://) URL, got {value!r}")
    if parts.query or parts.fragment:
        raise _Bad(
            f"must be a URL without ?query or #fragment (the provider drops it), got {value!r}"
        )
    return value


def _phone_number(raw: str) -> str:
    value = raw.strip()
    if not re.match(r"^\+[1-9][0-9]{6,14}$", value):
        raise _Bad(f"must be a phone number in E.164 form such as +14155238886, got {raw!r}")
    return value


def _whatsapp_number(raw: str) -> str:
    value = raw.strip().removeprefix("whatsapp:")
    if not re.match(r"^\+[1-9][0-9]{6,14}$", value):
        raise _Bad(f"must be a phone number in E.164 form such as +14155238886, got {raw!r}")
    return value


# ---------------------------------------------------------------- the table


@attrs.frozen
class Setting:
    name: str
    default: str
    meaning: str
    parse: Callable[[str], Any] = _text
    secret: bool = False
    #: the value when the variable is blank and has no default ("" or () for lists)
    empty: Any = ""

    @property
    def field(self) -> str:
        return self.name.lower()


SETTINGS: tuple[Setting, ...] = (
    # service and storage
    Setting("APP_BIND", "127.0.0.1", "address the HTTP API listens on", _bind_address),
    Setting("APP_PORT", "8000", "port the HTTP API listens on", _integer(1, 65535)),
    Setting(
        "APP_WORKERS",
        "0",
        "HTTP API processes `ragchat serve` runs on APP_PORT, with the job worker and the "
        "voice server each in a process of its own beside them; 0 is one per CPU core it "
        "may use, 1 runs everything in one process",
        _integer(0, 64),
    ),
    Setting(
        "SERVICE_API_KEY",
        "",
        "when set, every route but /health, /webhook/*, the console's and API reference's "
        "pages and the chat widget's visitor routes needs the header X-API-Key",
        secret=True,
    ),
    Setting(
        "ALLOW_INSECURE_BIND",
        "false",
        "true lets a non-loopback APP_BIND start without SERVICE_API_KEY",
        _boolean,
    ),
    Setting(
        "DATABASE_URL",
        "",
        "PostgreSQL (with pgvector) to use; unset starts the embedded server under DATA_DIR",
        _database_url,
        secret=True,
    ),
    Setting("DATA_DIR", "./data", "folder for the embedded database and local state"),
    Setting(
        "TRUSTED_PROXIES",
        "127.0.0.1,::1",
        "addresses or networks of the reverse proxies in front of the service: a request "
        "from one is taken to come from the address its X-Forwarded-For names (the chat "
        "widget's quotas per IP address count that one)",
        _networks,
    ),
    Setting(
        "POSTGRES_PASSWORD",
        "",
        "database password of the compose deployment, which builds DATABASE_URL from it; "
        "the service only checks it (letters and digits only)",
        _alphanumeric,
        secret=True,
    ),
    # providers
    Setting(
        "LLM_PROVIDER",
        "",
        "answering provider: genai, openai, anthropic or extractive; unset follows the keys "
        "present, else extractive (offline)",
        _choice(LLM_PROVIDERS),
    ),
    Setting(
        "LLM_FALLBACK_PROVIDERS",
        "",
        "comma-separated providers tried in order when the primary fails; blank: no fallback",
        _choices(LLM_PROVIDERS),
        empty=(),
    ),
    Setting(
        "EMBEDDING_PROVIDER",
        "",
        "embedding provider: genai, openai or local; unset keeps the stored chunks' embedder "
        "while it can run, else follows the keys present, else local",
        _choice(EMBEDDING_PROVIDERS),
    ),
    Setting("GENAI_API_KEY", "", "Gemini API key (bring your own)", secret=True),
    Setting("GENAI_CHAT_MODEL", "gemini-2.5-flash", "Gemini chat model"),
    Setting("GENAI_EMBEDDING_MODEL", "gemini-embedding-001", "Gemini embedding model"),
    Setting(
        "EMBEDDING_DIMENSIONS",
        "3072",
        "vector size asked of the genai and openai embedders (the local one has its own)",
        _integer(1, 4000),
    ),
    Setting("OPENAI_API_KEY", "", "OpenAI (or compatible server) API key", secret=True),
    Setting(
        "OPENAI_BASE_URL",
        "",
        "OpenAI-compatible server URL (Ollama, vLLM, OpenRouter…); unset: api.openai.com",
        _http_url,
    ),
    Setting("OPENAI_CHAT_MODEL", "gpt-4o-mini", "OpenAI chat model"),
    Setting(
        "OPENAI_EMBEDDING_MODEL",
        "text-embedding-3-large",
        "OpenAI embedding model (3,072 dimensions, the EMBEDDING_DIMENSIONS default)",
    ),
    Setting("ANTHROPIC_API_KEY", "", "Anthropic API key", secret=True),
    Setting("ANTHROPIC_CHAT_MODEL", "claude-sonnet-4-6", "Anthropic chat model"),
    Setting(
        "PROVIDER_TIMEOUT_SECONDS",
        "60",
        "timeout of each provider call",
        _number(1, 600),
    ),
    Setting(
        "MAX_PROVIDER_REPLY_BYTES",
        "67108864",
        "largest reply read from an answering or embedding provider, whole or streamed "
        "(64 MB); a larger one is refused as it arrives, a bad reply",
        _integer(minimum=2**20),
    ),
    # generation and retrieval
    Setting("MAX_OUTPUT_TOKENS", "1024", "generation output length", _integer(1, 1_000_000)),
    Setting("DEFAULT_TEMPERATURE", "0.3", "generation temperature", _number(0.0, 2.0)),
    Setting(
        "MAX_CONTEXT_CHARS",
        "12000",
        "retrieved-context budget in characters (lowest-ranked chunks dropped first; a chunk "
        "is about 1,000 characters); 0 disables trimming",
        _integer(minimum=0),
    ),
    Setting(
        "MAX_UPLOAD_BYTES",
        "26214400",
        "largest document accepted (25 MB)",
        _integer(minimum=1),
    ),
    Setting(
        "MAX_DOCUMENT_CHUNKS",
        "1000",
        "most chunks one document added in a request may make (about 1 MB of text; 413 "
        "above it); uploads ingested as a job (INGEST_JOB_BYTES) and `ragchat ingest` have "
        "no such limit",
        _integer(minimum=1),
    ),
    Setting(
        "INGEST_JOB_BYTES",
        "1048576",
        "an uploaded file larger than this (1 MB) is ingested as a background job: 202 "
        "with a job to poll at /documents/jobs/{id}; 0: every upload",
        _integer(minimum=0),
    ),
    Setting(
        "MAX_DOCUMENT_READ_SECONDS",
        "60",
        "most time reading one file into text may take (parsing a PDF, Word, HTML or CSV "
        "file; 413 beyond it)",
        _number(0.1, 3600),
    ),
    Setting(
        "HTTP_READ_TIMEOUT_SECONDS",
        "30",
        "longest wait for the next bytes of a request body; past it the answer is 408 and "
        "the connection closes",
        _number(0.1, 3600),
    ),
    Setting(
        "RUN_JOBS",
        "true",
        "`ragchat serve` also runs background jobs (large uploads, data source syncs); set "
        "false where `ragchat worker` processes run them",
        _boolean,
    ),
    Setting(
        "JOBS_CONCURRENCY",
        "1",
        "background jobs one process runs at a time",
        _integer(1, 64),
    ),
    Setting(
        "SHUTDOWN_GRACE_SECONDS",
        "20",
        "after SIGTERM, how long requests, jobs and calls in progress have to finish before "
        "they are cut off (keep it under the orchestrator's own grace period)",
        _number(0, 3600),
    ),
    # operations
    Setting(
        "LOG_FORMAT",
        "text",
        "text: one `time LEVEL logger: message` line per record; json: one JSON object a line",
        _choice(LOG_FORMATS),
    ),
    Setting(
        "METRICS_PUBLIC",
        "false",
        "true lets GET /metrics answer without X-API-Key (a scraper that cannot send it)",
        _boolean,
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "",
        "an OpenTelemetry collector's OTLP/HTTP address (http://collector:4318): a trace of "
        "every request and call is sent to its /v1/traces; unset: no tracing",
        _base_url,
    ),
    Setting(
        "OTEL_EXPORTER_OTLP_HEADERS",
        "",
        "headers sent with the traces, as key=value pairs joined by commas (a collector's API key)",
        secret=True,
    ),
    Setting("OTEL_SERVICE_NAME", "ragchat", "the service.name the traces are sent under"),
    # language
    Setting("DEFAULT_LANGUAGE", "en", "fallback language code", _language),
    Setting(
        "LANGUAGE_DETECTION_CONFIDENCE_THRESHOLD",
        "0.7",
        "language detection threshold",
        _number(0.0, 1.0),
    ),
    Setting(
        "LANGUAGE_DETECTION_SUPPORTED_LANGUAGES",
        "",
        "comma-separated language codes to restrict detection (and the languages OCR reads "
        "scans and images in, those installed; blank: DEFAULT_LANGUAGE's); blank: unrestricted",
        _languages,
        empty=(),
    ),
    Setting(
        "DICTIONARY_DIR",
        "/usr/share/dictd",
        "folder of the FreeDict dictionaries into English (dict-freedict-deu-eng and "
        "others, dictd's format) that translate the words of a question asked in German, "
        "French, Spanish, Italian, Dutch or Portuguese for the search and the offline "
        "answer; off: no translation",
        _folder_or_off,
    ),
    # knowledge graph
    Setting(
        "GRAPH_ENABLED",
        "auto",
        "the knowledge graph (entities and relations from the documents, a third ranked list "
        "in retrieval): auto: on when GRAPH_URI is set; true: on (in the service's PostgreSQL "
        "unless GRAPH_URI names a Neo4j); false: off",
        _choice(GRAPH_ENABLED_CHOICES),
    ),
    Setting(
        "GRAPH_URI",
        "",
        "optional Neo4j for the knowledge graph: bolt://, bolt+s://, neo4j:// or neo4j+s:// "
        "host:port (needs the graph extra: pip install 'ragchat[graph]'); blank: the graph's "
        "tables in the service's database",
        _graph_uri,
    ),
    Setting("GRAPH_USER", "", "knowledge graph user"),
    Setting("GRAPH_PASSWORD", "", "knowledge graph password", secret=True),
    Setting(
        "DOMAIN_TERMS", "", "comma-separated terms that boost entity extraction", _items, empty=()
    ),
    Setting(
        "GRAPH_WEIGHT",
        "0.5",
        "weight of the graph's ranked list in the reciprocal rank fusion (the dense and "
        "full-text lists weigh 1; 0.5 measured best, docs/graph.md); 0 leaves it out",
        _number(0.0, 10.0),
    ),
    Setting(
        "GRAPH_HOPS",
        "1",
        "how far from the question's entities the graph reaches: 1 or 2 relations",
        _integer(minimum=1, maximum=2),
    ),
    Setting(
        "GRAPH_MODEL_EXTRACTION",
        "false",
        "true: when a language model answers, it also reads every chunk stored for entities "
        "and typed relations (one call a chunk, metered and held to the budgets); the offline "
        "rules always run",
        _boolean,
    ),
    Setting(
        "GRAPH_TIMEOUT_SECONDS",
        "5",
        "longest wait for the graph store; past it the answer goes on without the graph",
        _number(0.1, 120),
    ),
    # employees
    Setting(
        "SENSITIVE_ROLES_EXTRA",
        "",
        "comma-separated role names treated as sensitive",
        _roles,
        empty=(),
    ),
    Setting(
        "SENSITIVE_ROLES_REVIEWED_SAFE",
        "",
        "comma-separated runtime roles exempted from marker-word sensitivity",
        _roles,
        empty=(),
    ),
    # integrations and outbound actions
    Setting(
        "ADDON_ENCRYPTION_KEY",
        "",
        "Fernet key encrypting stored connector credentials (`ragchat keygen`)",
        _fernet_key,
        secret=True,
    ),
    Setting(
        "ADDON_ENCRYPTION_KEY_PREVIOUS",
        "",
        "the key before ADDON_ENCRYPTION_KEY: still read, never written, until "
        "`ragchat rekey` has re-encrypted everything with the new one",
        _fernet_key,
        secret=True,
    ),
    Setting(
        "INTEGRATIONS_TIMEOUT_SECONDS",
        "20",
        "time each request to a data source gets (connecting, a query, one page)",
        _number(0.1, 300),
    ),
    Setting(
        "INTEGRATIONS_SYNC_MAX_RECORDS",
        "100000",
        "the most records one sync of a data source stores; a sync reaching it stops there",
        _integer(1, 10_000_000),
    ),
    Setting(
        "LIVE_QUERY_TIMEOUT_SECONDS",
        "5",
        "the most time a live action's query gets on its data source, connecting included "
        "(a customer is waiting); a source that has not answered by then is a failure",
        _number(0.01, 300),
    ),
    Setting(
        "INTEGRATIONS_ALLOW_HTTP_LOOPBACK",
        "false",
        "true lets SaaS and REST data sources use http:// on 127.0.0.1 (local testing only; "
        "logged each time)",
        _boolean,
    ),
    Setting(
        "INTEGRATIONS_ALLOW_PRIVATE_TARGETS",
        "false",
        "true lets data sources reach loopback, private and carrier-grade NAT addresses: the "
        "owner's database or API on this host or LAN (link-local and cloud metadata addresses, "
        "the service itself and its own database stay refused)",
        _boolean,
    ),
    Setting(
        "INTEGRATIONS_ALLOW_UNIX_SOCKETS",
        "false",
        "true lets database data sources connect through a Unix socket (a host that is a "
        "path); the service's own database and anything under DATA_DIR stay refused",
        _boolean,
    ),
    Setting(
        "INTEGRATIONS_MAX_RESPONSE_MB",
        "20",
        "the most one answer of a data source may hold (a page, a test, a live query; a "
        "Google sheet's range is one answer); past it the call fails, nothing more is read",
        _number(0.001, 1024),
    ),
    # websites as sources of documents (ragio.websites)
    Setting(
        "WEBSITES_TIMEOUT_SECONDS",
        "20",
        "the most time one page of a website crawl gets, connecting and its whole body "
        "included (a server that trickles its answer is cut off there)",
        _number(0.1, 600),
    ),
    Setting(
        "WEBSITES_MAX_PAGE_MB",
        "10",
        "the most one fetched page (or sitemap) of a website may hold; a larger one is "
        "recorded as failed, nothing more of it read",
        _number(0.001, 1024),
    ),
    Setting(
        "WEBSITES_HOST_CONCURRENCY",
        "2",
        "pages of one host a crawl fetches at once (a robots.txt crawl-delay makes it one "
        "at a time, that far apart)",
        _integer(1, 32),
    ),
    Setting(
        "WEBSITES_ALLOW_PRIVATE_TARGETS",
        "false",
        "true lets website crawls reach loopback, private and carrier-grade NAT addresses: "
        "an intranet site, or a local copy for testing (link-local and cloud metadata "
        "addresses and the service itself stay refused)",
        _boolean,
    ),
    Setting(
        "WEBHOOK_TARGETS",
        "",
        "comma-separated name=https://… pairs the AI may call by name (a secret: such URLs "
        "often carry a token)",
        _named_https_targets,
        empty=(),
        secret=True,
    ),
    Setting(
        "CHATOPS_WEBHOOK_URL", "", "chat-ops incoming webhook (https)", _https_url, secret=True
    ),
    Setting("SMTP_HOST", "", "mail server host"),
    Setting("SMTP_PORT", "587", "mail server port", _integer(1, 65535)),
    Setting(
        "SMTP_SECURITY",
        "starttls",
        "how mail is encrypted: starttls (usually port 587) or tls (usually port 465); "
        "mail is never sent in clear",
        _choice(("starttls", "tls")),
    ),
    Setting("SMTP_USER", "", "mail server user"),
    Setting("SMTP_PASSWORD", "", "mail server password", secret=True),
    Setting("EMAIL_FROM", "", "sender address of outbound mail", _email),
    Setting(
        "EMAIL_ALLOWED_RECIPIENTS",
        "",
        "comma-separated addresses or @domain entries mail may go to; empty: none",
        _recipients,
        empty=(),
    ),
    Setting(
        "APPROVAL_TTL_HOURS",
        "24",
        "hours a held action waits for the owner's YES before it expires",
        _integer(1, 8760),
    ),
    Setting(
        "ACTIONS_TIMEOUT_SECONDS",
        "10",
        "time each outbound action (webhook, e-mail, chat-ops) gets, connecting included",
        _number(0.1, 120),
    ),
    Setting(
        "ACTIONS_ALLOW_PRIVATE_TARGETS",
        "false",
        "true lets webhook and chat-ops actions reach loopback and private addresses "
        "(local testing only; logged loudly)",
        _boolean,
    ),
    Setting(
        "ACTIONS_CA_BUNDLE",
        "",
        "PEM file of extra certificate authorities trusted for webhook, chat-ops, workflow "
        "and SMTP connections (a private CA); blank: the system's only",
    ),
    # automation workflows
    Setting(
        "WORKFLOW_SIGNING_SECRET",
        "",
        "signs workflow calls the Standard Webhooks way (whsec_<base64> or text, 16+ bytes); "
        "blank: calls are unsigned",
        _signing_secret,
        secret=True,
    ),
    Setting(
        "WORKFLOW_ALLOW_PRIVATE_TARGETS",
        "false",
        "true lets workflow calls reach loopback and private addresses: a workflow engine on "
        "this host or LAN (link-local and cloud metadata addresses stay refused)",
        _boolean,
    ),
    # text channels (docs/operations.md sets each one up)
    Setting(
        "PUBLIC_BASE_URL",
        "",
        "the service's public URL as the platforms call it (https://chat.example.com), "
        "behind any reverse proxy; WhatsApp signatures cover it; blank: the request's own URL",
        _base_url,
    ),
    Setting(
        "TELEGRAM_BOT_TOKEN",
        "",
        "Telegram bot token from @BotFather; replies are sent with it",
        _pattern(r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$", "a bot token such as 123456:ABC-…"),
        secret=True,
    ),
    Setting(
        "TELEGRAM_WEBHOOK_SECRET",
        "",
        "secret_token registered with the Telegram webhook (1-256 of A-Z a-z 0-9 _ -); "
        "`ragchat telegram set-webhook` registers it",
        _pattern(r"^[A-Za-z0-9_-]{1,256}$", "1-256 characters of A-Z, a-z, 0-9, _ and -"),
        secret=True,
    ),
    Setting(
        "TELEGRAM_ALLOW_UNSIGNED",
        "false",
        "true accepts Telegram requests without the secret (local testing only)",
        _boolean,
    ),
    Setting(
        "TELEGRAM_API_BASE_URL",
        "https://api.telegram.org",
        "Telegram Bot API server (a local Bot API server, or a test fake)",
        _base_url,
    ),
    Setting(
        "TELCO_ACCOUNT_SID",
        "",
        "telephony provider account SID; WhatsApp replies are sent through its Messages API",
        _pattern(r"^[A-Za-z0-9]{2,64}$", "an account SID such as AC0123… (letters and digits)"),
    ),
    Setting(
        "TELCO_AUTH_TOKEN",
        "",
        "telephony provider auth token: signs WhatsApp webhooks and authenticates replies",
        secret=True,
    ),
    Setting(
        "WHATSAPP_FROM_NUMBER",
        "",
        "WhatsApp sender number of replies (+14155238886); blank: the number written to",
        _whatsapp_number,
    ),
    Setting(
        "TELCO_API_BASE_URL",
        "https://api.twilio.com",
        "telephony provider REST API server (or a test fake)",
        _base_url,
    ),
    Setting(
        "WHATSAPP_ALLOW_UNSIGNED",
        "false",
        "true accepts unsigned WhatsApp requests (local testing only; warns each time)",
        _boolean,
    ),
    Setting(
        "DISCORD_PUBLIC_KEY",
        "",
        "Discord application public key (64 hex digits); interactions are verified with it",
        _pattern(r"^[0-9a-fA-F]{64}$", "the 64 hex digits Discord shows as PUBLIC KEY"),
    ),
    Setting(
        "DISCORD_APPLICATION_ID",
        "",
        "Discord application id; `ragchat discord register-command` registers /ask under it",
        _pattern(r"^[0-9]{1,20}$", "the application id (digits)"),
    ),
    Setting(
        "DISCORD_BOT_TOKEN",
        "",
        "Discord bot token, only for `ragchat discord register-command`",
        secret=True,
    ),
    Setting(
        "DISCORD_API_BASE_URL",
        "https://discord.com/api/v10",
        "Discord REST API (or a test fake)",
        _base_url,
    ),
    # voice (docs/operations.md, "Voice", sets up a phone number)
    Setting(
        "VOICEAI_API_KEY",
        "",
        "speech provider key (Deepgram's wire format), for speech-to-text and text-to-speech; "
        "set, `ragchat serve` on the embedded database also answers calls",
        secret=True,
    ),
    Setting(
        "VOICEAI_BASE_URL",
        "https://api.deepgram.com",
        "speech provider API; its WebSocket (ws/wss) is the same URL (or a test fake)",
        _base_url,
    ),
    Setting(
        "VOICE_BIND", "127.0.0.1", "address the voice WebSocket server listens on", _bind_address
    ),
    Setting("VOICE_PORT", "8765", "port the voice WebSocket server listens on", _integer(1, 65535)),
    Setting(
        "VOICE_PUBLIC_URL",
        "",
        "the wss:// URL the telephony provider opens the media stream at (behind any proxy); "
        "blank: PUBLIC_BASE_URL's host on VOICE_PORT",
        _stream_url,
    ),
    Setting(
        "VOICE_ALLOW_UNSIGNED",
        "false",
        "true accepts voice webhooks and media streams without a valid X-Twilio-Signature "
        "(local testing only; warns each time)",
        _boolean,
    ),
    Setting("VOICE_BOT_NAME", "", "name the voice assistant introduces itself with"),
    Setting(
        "VOICE_GREETING",
        "",
        "first sentence spoken on a call; blank: built from VOICE_BOT_NAME and the business "
        "profile",
    ),
    Setting(
        "VOICE_TTS_VOICE",
        "",
        "text-to-speech voice (model), such as aura-2-thalia-en; blank: aura-2-thalia-en",
        _pattern(r"^[A-Za-z0-9._-]{1,100}$", "a voice name such as aura-2-thalia-en"),
    ),
    Setting(
        "VOICE_STT_MODEL",
        "nova-3",
        "speech-to-text model",
        _pattern(r"^[A-Za-z0-9._-]{1,100}$", "a model name such as nova-3"),
    ),
    Setting(
        "VOICE_LANGUAGE",
        "en",
        "language callers speak, as the speech provider names it (en, en-US, es, de, …; "
        "multi: several, where the model supports it)",
        _pattern(r"^(multi|[a-z]{2,3}(-[A-Za-z0-9]{2,8})*)$", "a language code such as en or es"),
    ),
    Setting(
        "VOICE_MAX_CALLS",
        "20",
        "calls answered at once; more are refused (503) so the ones in progress stay smooth",
        _integer(1, 1000),
    ),
    Setting(
        "VOICE_TRANSFER_NUMBER",
        "",
        "the number (E.164) a call handed to a person is put through to; blank: the caller "
        "leaves a message for the inbox",
        _phone_number,
    ),
    Setting(
        "HANDOFF_AFTER_REFUSALS",
        "2",
        "grounded refusals in a row that hand a customer's conversation to a person; 0: never",
        _integer(0, 100),
    ),
    Setting(
        "HANDOFF_IDLE_MINUTES",
        "60",
        "a conversation with a person that nobody wrote in for this long goes back to the AI",
        _integer(1, 525600),
    ),
    Setting(
        "CONVERSATION_RETENTION_DAYS",
        "90",
        "days a conversation and its turns are kept (GET /conversations); 0 keeps them",
        _integer(0, 36500),
    ),
    # usage ledger and budgets (0 or unset: unlimited; UTC days and months)
    Setting("USAGE_LEDGER", "false", "true records every LLM call in the usage ledger", _boolean),
    Setting("BUDGET_DAILY_TOKENS", "0", "global tokens per UTC day", _integer(minimum=0)),
    Setting("BUDGET_MONTHLY_TOKENS", "0", "global tokens per UTC month", _integer(minimum=0)),
    Setting("BUDGET_ROLE_DAILY_TOKENS", "0", "per-role tokens per UTC day", _integer(minimum=0)),
    Setting(
        "BUDGET_ROLE_MONTHLY_TOKENS",
        "0",
        "per-role tokens per UTC month",
        _integer(minimum=0),
    ),
    Setting(
        "BUDGET_ROLE_DAILY_OVERRIDES",
        "",
        "comma-separated role=<tokens> pairs overriding the per-role daily cap",
        _role_tokens,
        empty=(),
    ),
    Setting(
        "BUDGET_ROLE_MONTHLY_OVERRIDES",
        "",
        "comma-separated role=<tokens> pairs overriding the per-role monthly cap",
        _role_tokens,
        empty=(),
    ),
)

SETTING_NAMES = frozenset(s.name for s in SETTINGS)


@attrs.frozen(repr=False)
class Settings:
    """Every setting, typed. Build it with load_settings().

    The fields are the table's, in its order (checked below, so the two cannot drift);
    each field's type is what its setting's parser returns (tests/core checks it).
    """

    app_bind: str
    app_port: int
    app_workers: int
    service_api_key: str
    allow_insecure_bind: bool
    database_url: str
    data_dir: str
    trusted_proxies: tuple[str, ...]
    postgres_password: str
    llm_provider: str
    llm_fallback_providers: tuple[str, ...]
    embedding_provider: str
    genai_api_key: str
    genai_chat_model: str
    genai_embedding_model: str
    embedding_dimensions: int
    openai_api_key: str
    openai_base_url: str
    openai_chat_model: str
    openai_embedding_model: str
    anthropic_api_key: str
    anthropic_chat_model: str
    provider_timeout_seconds: float
    max_provider_reply_bytes: int
    max_output_tokens: int
    default_temperature: float
    max_context_chars: int
    max_upload_bytes: int
    max_document_chunks: int
    ingest_job_bytes: int
    max_document_read_seconds: float
    http_read_timeout_seconds: float
    run_jobs: bool
    jobs_concurrency: int
    shutdown_grace_seconds: float
    log_format: str
    metrics_public: bool
    otel_exporter_otlp_endpoint: str
    otel_exporter_otlp_headers: str
    otel_service_name: str
    default_language: str
    language_detection_confidence_threshold: float
    language_detection_supported_languages: tuple[str, ...]
    dictionary_dir: str
    graph_enabled: str
    graph_uri: str
    graph_user: str
    graph_password: str
    domain_terms: tuple[str, ...]
    graph_weight: float
    graph_hops: int
    graph_model_extraction: bool
    graph_timeout_seconds: float
    sensitive_roles_extra: tuple[str, ...]
    sensitive_roles_reviewed_safe: tuple[str, ...]
    addon_encryption_key: str
    addon_encryption_key_previous: str
    integrations_timeout_seconds: float
    integrations_sync_max_records: int
    live_query_timeout_seconds: float
    integrations_allow_http_loopback: bool
    integrations_allow_private_targets: bool
    integrations_allow_unix_sockets: bool
    integrations_max_response_mb: float
    websites_timeout_seconds: float
    websites_max_page_mb: float
    websites_host_concurrency: int
    websites_allow_private_targets: bool
    webhook_targets: tuple[tuple[str, str], ...]
    chatops_webhook_url: str
    smtp_host: str
    smtp_port: int
    smtp_security: str
    smtp_user: str
    smtp_password: str
    email_from: str
    email_allowed_recipients: tuple[str, ...]
    approval_ttl_hours: int
    actions_timeout_seconds: float
    actions_allow_private_targets: bool
    actions_ca_bundle: str
    workflow_signing_secret: str
    workflow_allow_private_targets: bool
    public_base_url: str
    telegram_bot_token: str
    telegram_webhook_secret: str
    telegram_allow_unsigned: bool
    telegram_api_base_url: str
    telco_account_sid: str
    telco_auth_token: str
    whatsapp_from_number: str
    telco_api_base_url: str
    whatsapp_allow_unsigned: bool
    discord_public_key: str
    discord_application_id: str
    discord_bot_token: str
    discord_api_base_url: str
    voiceai_api_key: str
    voiceai_base_url: str
    voice_bind: str
    voice_port: int
    voice_public_url: str
    voice_allow_unsigned: bool
    voice_bot_name: str
    voice_greeting: str
    voice_tts_voice: str
    voice_stt_model: str
    voice_language: str
    voice_max_calls: int
    voice_transfer_number: str
    handoff_after_refusals: int
    handoff_idle_minutes: int
    conversation_retention_days: int
    usage_ledger: bool
    budget_daily_tokens: int
    budget_monthly_tokens: int
    budget_role_daily_tokens: int
    budget_role_monthly_tokens: int
    budget_role_daily_overrides: tuple[tuple[str, int], ...]
    budget_role_monthly_overrides: tuple[tuple[str, int], ...]

    def __repr__(self) -> str:  # a secret never reaches a log through repr()
        def shown(s: Setting) -> str:
            value = getattr(self, s.field)
            return "***" if s.secret and value else repr(value)

        return "Settings(" + ", ".join(f"{s.field}={shown(s)}" for s in SETTINGS) + ")"


if [field.name for field in attrs.fields(Settings)] != [s.field for s in SETTINGS]:
    raise TypeError("Settings' fields must be the SETTINGS table's, in its order")


def load_settings(
    environ: Mapping[str, str], dotenv: Mapping[str, str | None] | None = None
) -> Settings:
    """Parse settings from ``environ`` over ``dotenv``; raise SettingsError naming every bad one."""
    merged = {k: v for k, v in (dotenv or {}).items() if v is not None}
    merged.update(environ)
    values: dict[str, Any] = {}
    problems: list[str] = []
    for setting in SETTINGS:
        raw = merged.get(setting.name, "")
        raw = raw if raw.strip() else setting.default
        try:
            values[setting.field] = setting.parse(raw) if raw.strip() else setting.empty
        except _Bad as bad:
            problems.append(f"{setting.name}: {bad if not setting.secret else _unseen(setting)}")
    if not problems:
        problems.extend(_cross_checks(values))
    if problems:
        raise SettingsError(problems)
    return Settings(**values)


def _unseen(setting: Setting) -> str:
    """What a secret setting takes, with nothing of its value (the parser's message may
    quote it, a URL's token path say): start-up errors are printed and logged."""
    requirement = getattr(setting.parse, "requirement", "is not valid")
    return f"{requirement} {VALUE_HIDDEN}"


def _cross_checks(values: dict[str, Any]) -> list[str]:
    problems = []
    budgets = [
        s.name
        for s in SETTINGS
        if s.name.startswith("BUDGET_")
        and values[s.field]
        and (not isinstance(values[s.field], tuple) or any(t for _, t in values[s.field]))
    ]
    if budgets and not values["usage_ledger"]:
        problems.append(
            f"USAGE_LEDGER: budgets are counted from the usage ledger; set USAGE_LEDGER=true "
            f"for {', '.join(budgets)} to take effect"
        )
    if values["llm_provider"] in values["llm_fallback_providers"]:
        problems.append(
            f"LLM_FALLBACK_PROVIDERS: lists the primary provider {values['llm_provider']!r}"
        )
    return problems


# ---------------------------------------------------------------- derived


def answering_provider(settings: Settings) -> str:
    """LLM_PROVIDER, else the provider whose key is present, else offline extractive."""
    if settings.llm_provider:
        return settings.llm_provider
    for name, key in (
        ("genai", "genai_api_key"),
        ("openai", "openai_api_key"),
        ("anthropic", "anthropic_api_key"),
    ):
        if getattr(settings, key):
            return name
    return "extractive"


def embedding_provider(settings: Settings) -> str:
    """EMBEDDING_PROVIDER, else the provider whose key is present, else offline local: the
    embedder the settings prefer. Start-up may keep the stored chunks' embedder instead
    (``ragcore.knowledge.embedding_space.choose_embedder``); ``ragchat reindex`` moves
    them to this one."""
    if settings.embedding_provider:
        return settings.embedding_provider
    for name, key in (("genai", "genai_api_key"), ("openai", "openai_api_key")):
        if getattr(settings, key):
            return name
    return "local"


def graph_store_kind(settings: Settings) -> str | None:
    """Where the knowledge graph lives: "neo4j", "postgres", or None when it is off."""
    if settings.graph_enabled == "false":
        return None
    if settings.graph_uri:
        return "neo4j"
    return "postgres" if settings.graph_enabled == "true" else None


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    return ipaddress.ip_address(address).is_loopback


def example_file() -> str:
    """The text of .env.example: every setting, its default and its meaning."""
    lines = [
        "# ragchat settings. Every variable, its default and its meaning.",
        "# Copy to .env and change what you need; the environment wins over .env.",
        "",
    ]
    for setting in SETTINGS:
        lines.append(f"# {setting.meaning}")
        lines.append(f"{setting.name}={setting.default}")
        lines.append("")
    return "\n".join(lines)


def bind_refusal(settings: Settings) -> str | None:
    """Why ``serve`` must not start on this bind address, or None when it may."""
    if is_loopback(settings.app_bind) or settings.service_api_key or settings.allow_insecure_bind:
        return None
    return (
        f"APP_BIND={settings.app_bind} would expose the API beyond this machine with no "
        "authentication: set SERVICE_API_KEY (clients then send X-API-Key), bind to 127.0.0.1, "
        "or set ALLOW_INSECURE_BIND=true if a proxy in front adds authentication"
    )


def voice_refusal(settings: Settings) -> str | None:
    """Why the voice server must not start as configured, or None when it may: it needs
    the speech key, and beyond loopback its key is the provider's signature (a media stream
    is a caller's voice and a free line to the answering pipeline)."""
    if not settings.voiceai_api_key:
        return "the voice server needs VOICEAI_API_KEY (the speech provider's key)"
    if is_loopback(settings.voice_bind) or settings.allow_insecure_bind:
        return None
    if not settings.telco_auth_token or settings.voice_allow_unsigned:
        return (
            f"VOICE_BIND={settings.voice_bind} would take calls from beyond this machine without "
            "checking who opens them: set TELCO_AUTH_TOKEN (and leave VOICE_ALLOW_UNSIGNED off), "
            "bind to 127.0.0.1, or set ALLOW_INSECURE_BIND=true"
        )
    return None
