"""How many questions the widget takes, and from whom: per visitor per day, per IP
address per hour and per day, and the site's tokens per day (UTC days).

The counters are kept in the service's database, so they hold across replicas; a
question is counted in every counter at once or in none (the store increments them in
one transaction, each only while under its limit, in the order ``counters`` gives, so
two questions never wait on each other). The site's tokens are reserved with the
question, as many as it could spend at most (``question_reserve``: the prompt's context,
its history and instructions, the answer and a check or rewrite), and settled to what it
spent once answered: the day's tokens never pass the limit, however many questions are
in flight at once.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from datetime import datetime, timedelta

import attrs

from ragcore.usage import CHARS_PER_TOKEN, estimate_tokens
from ragcore.widget.sites import Site

VISITOR = "visitor"
IP = "ip"
TOKENS = "tokens"
HOUR = "hour"
DAY = "day"

#: what the visitor reads when a quota is reached (the widget shows ``detail`` as is)
MESSAGES = {
    (VISITOR, DAY): "You have asked a lot of questions today: please come back tomorrow.",
    (IP, HOUR): "Many questions came from your network in the last hour: please try again later.",
    (IP, DAY): "Many questions came from your network today: please come back tomorrow.",
    (TOKENS, DAY): "The assistant has answered all the questions it can today: please come "
    "back tomorrow.",
}


@attrs.frozen
class Counter:
    """One quota's counter for one question: what it counts (``subject``), over which
    ``window`` starting when, up to ``limit``."""

    subject: str  # "visitor:<id>", "ip:<hash>", "tokens"
    kind: str  # VISITOR, IP, TOKENS
    window: str  # HOUR, DAY
    start: datetime
    limit: int

    @property
    def ends(self) -> datetime:
        return self.start + (timedelta(hours=1) if self.window == HOUR else timedelta(days=1))

    def retry_after(self, now: datetime) -> int:
        """Whole seconds until the window ends (at least 1)."""
        return max(1, math.ceil((self.ends - now).total_seconds()))

    @property
    def name(self) -> str:
        """The quota's name: ``visitor_day``, ``ip_hour``, ``ip_day``, ``tokens_day``."""
        return f"{self.kind}_{self.window}"

    @property
    def message(self) -> str:
        return MESSAGES[(self.kind, self.window)]


def window_start(now: datetime, window: str) -> datetime:
    if window == HOUR:
        return now.replace(minute=0, second=0, microsecond=0)
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def address_key(site_id: int, address: str) -> str:
    """An IP address as counted: hashed with the site (the counters keep no address)."""
    return hashlib.sha256(f"{site_id}:{address}".encode()).hexdigest()[:32]


def question_counters(site: Site, visitor: str, address: str, now: datetime) -> list[Counter]:
    """The counters a question adds one to, in the order they are taken (each under its
    limit, all or none)."""
    ip = f"ip:{address_key(site.id, address)}"
    return [
        Counter(
            f"visitor:{visitor}",
            VISITOR,
            DAY,
            window_start(now, DAY),
            site.visitor_questions_per_day,
        ),
        Counter(ip, IP, HOUR, window_start(now, HOUR), site.ip_questions_per_hour),
        Counter(ip, IP, DAY, window_start(now, DAY), site.ip_questions_per_day),
    ]


#: a question's context when MAX_CONTEXT_CHARS does not bound it (0)
UNBOUNDED_CONTEXT_CHARS = 40_000
#: the conversation's latest exchanges and the instructions in a prompt, at most
HISTORY_AND_INSTRUCTIONS_TOKENS = 3_000


def question_reserve(question: str, max_context_chars: int, max_output_tokens: int) -> int:
    """The most tokens one question may spend: the question in up to three prompts (a
    follow-up's rewrite, the answer, the grounding check), the retrieved context, the
    history and instructions, and two outputs (the answer, a check)."""
    context = max_context_chars or UNBOUNDED_CONTEXT_CHARS
    return (
        3 * estimate_tokens(question)
        + context // CHARS_PER_TOKEN
        + HISTORY_AND_INSTRUCTIONS_TOKENS
        + 2 * max_output_tokens
    )


def tokens_counter(site: Site, now: datetime) -> Counter | None:
    """The site's tokens of the day; None when it has no limit."""
    if site.tokens_per_day == 0:
        return None
    return Counter(TOKENS, TOKENS, DAY, window_start(now, DAY), site.tokens_per_day)


def client_address(peer: str, forwarded_for: list[str], trusted: tuple[str, ...]) -> str:
    """The address a request came from: its peer's, unless the peer is one of the
    ``trusted`` proxies; then the last address of ``X-Forwarded-For`` (each proxy appends
    the one it heard from) that is not a trusted proxy itself. A client can write any
    X-Forwarded-For of its own, but only the addresses the trusted proxies appended after
    it are believed."""
    networks = [ipaddress.ip_network(item, strict=False) for item in trusted]

    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in networks)

    if not is_trusted(peer):
        return peer
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a proxy would not write that: the client did
    return hops[0] if hops else peer
