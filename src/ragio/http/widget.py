"""The chat widget's visitor side, open to the public (no API key; docs/widget.md): the
script (``/widget.js``), a session for a site (``/widget/sessions``), questions
(``/widget/chat/stream``), the visitor's conversation and feedback.

Who may call: a browser on one of the site's allowed origins (``Origin``, exact) gets
CORS answers; any other origin is refused. An ``Origin`` can be forged outside a
browser, so every question also passes the quotas (per visitor, per IP address, the
site's tokens: ``ragcore.widget.quotas``), counted in the database for every replica.
The visitor is who the service's signed token says (``ragcore.widget.tokens``), never
what the client names."""

from __future__ import annotations

import base64
import json
import logging
import secrets
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

import attrs
import psycopg
from quart import Blueprint, Response, g, request

from ragcore.api.chat import sse
from ragcore.api.conversation_events import EventsQuery, sse_event, visitor_event_stream
from ragcore.api.operations import Reply, operation
from ragcore.api.problems import ProblemError
from ragcore.api.widget import (
    VISITOR_FAILURE,
    NewSession,
    Session,
    SiteLook,
    WidgetConversation,
    WidgetFeedback,
    WidgetQuestion,
    WidgetTurn,
    visitor_answer,
    visitor_problem,
    widget_event_stream,
)
from ragcore.channel_names import WEB
from ragcore.channels.routing import chosen_role
from ragcore.chat.history import IDLE_MINUTES, place_key
from ragcore.chat.pipeline import ChatAnswer, ChatRequest
from ragcore.chat.turn import TurnRequest
from ragcore.converter import converter, structure_body
from ragcore.employees.roles import Role
from ragcore.widget import tokens
from ragcore.widget.quotas import (
    client_address,
    question_counters,
    question_reserve,
    tokens_counter,
)
from ragcore.widget.tokens import TOKEN_LIFETIME, TokenRefused, VisitorClaims
from ragio.chat import conversations
from ragio.chat.feedback import rate
from ragio.employees import store as employees_store
from ragio.handoff.feed import FeedEvent
from ragio.http.chat import ChatWire
from ragio.http.context import service
from ragio.http.conversation_events import LAST_EVENT_ID, event_stream, resume_point
from ragio.http.inputs import json_body
from ragio.http.problems import problem_for
from ragio.http.turns import stream_turn
from ragio.metrics import WIDGET_QUESTIONS
from ragio.widget import store
from ragio.widget.store import PublicSite

blueprint = Blueprint("widget", __name__)
log = logging.getLogger(__name__)
CHANNEL = WEB
#: the visitor's routes: open, answered to the allowed origins only
OPEN_PATHS = (
    "/widget.js",
    "/widget/sessions",
    "/widget/chat/stream",
    "/widget/conversation",
    "/widget/feedback",
    "/widget/events",
)
SCRIPT_HEADERS = {
    "Cache-Control": "public, max-age=3600",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Resource-Policy": "cross-origin",  # loaded by the owner's pages
}
NOT_VERIFIED = "the visitor's identity could not be verified"
#: a visitor's request body at most: a question of 4,000 characters, escaped, fits
MAX_BODY_BYTES = 32 * 1024


async def _body() -> dict[str, Any]:
    """The request's JSON object, at most MAX_BODY_BYTES (413 beyond: the public routes
    take no uploads)."""
    declared = request.content_length or 0
    if declared > MAX_BODY_BYTES or len(await request.get_data(as_text=False)) > MAX_BODY_BYTES:
        raise ProblemError(413, f"the body is over {MAX_BODY_BYTES} bytes")
    return await json_body(required=True)


def _origin() -> str | None:
    return request.headers.get("Origin")


def _allow(origin: str | None) -> None:
    """Answer ``origin`` with CORS (after the route, whatever it answered)."""
    g.widget_origin = origin


@blueprint.after_request
async def cors(response: Response) -> Response:
    """CORS for the allowed origin only; a preflight is answered for an origin that some
    enabled site allows (the site is known only from the request that follows)."""
    origin: str | None = getattr(g, "widget_origin", None)
    if request.method == "OPTIONS":
        asked = _origin()
        allowed = bool(asked) and await service().database.run(store.origin_allowed, asked)
        if allowed:
            origin = asked
            response.headers["Access-Control-Allow-Methods"] = "GET, POST"
            response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type"
            response.headers["Access-Control-Max-Age"] = "600"
    if origin:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = "Retry-After"
    response.vary.add("Origin")
    return response


def _check_origin(site: PublicSite) -> None:
    """The request's origin must be one the site allows (a browser always sends it); a
    request without one (not a browser) goes on to the quotas."""
    origin = _origin()
    if origin is not None and origin in site.site.allowed_origins:
        _allow(origin)  # the page may read whatever is answered, a refusal too
    if not site.site.enabled:
        raise ProblemError(403, "the chat is switched off on this site")
    if origin is not None and origin not in site.site.allowed_origins:
        raise ProblemError(403, "the chat is not allowed on this website (its origin)")


@blueprint.get("/widget.js")
@operation(Reply(200, "The widget's script", {"type": "string"}, "text/javascript"), open=True)
async def widget_script() -> Response:
    """The chat widget's script, for the owner's pages"""
    body = resources.files("ragio.console").joinpath("widget.js").read_bytes()
    return Response(body, content_type="text/javascript; charset=utf-8", headers=SCRIPT_HEADERS)


@blueprint.post("/widget/sessions")
@operation(
    Reply(201, "A visitor token for the site", Session), 403, 404, 413, 422, body=NewSession,
    open=True,
)  # fmt: skip
async def new_session() -> tuple[Session, int]:
    """Start or renew a visitor's session on a site"""
    svc = service()
    asked = structure_body(await _body(), NewSession)
    site = await svc.database.run(store.public_site, asked.site)
    if site is None:
        raise ProblemError(404, f"no site {asked.site[:40]!r}", field="site")
    if _origin() is None:
        raise ProblemError(403, "a session is started by the widget in a browser (no Origin)")
    _check_origin(site)
    user = None
    if asked.user_id is not None or asked.user_hash is not None:
        verified = (
            asked.user_id is not None
            and asked.user_hash is not None
            and tokens.identity_verified(site.identity_secret, asked.user_id, asked.user_hash)
        )
        if not verified:
            raise ProblemError(403, NOT_VERIFIED)
        user = asked.user_id
    now = svc.clock.now()
    earlier = None
    if asked.renew is not None:
        earlier = tokens.renewable(
            site.token_key,
            asked.renew,
            site=site.site.public_id,
            now=now,
            generation=site.sessions_generation,
        )
    # the same visitor goes on only with the same identity (or none, before and now)
    if earlier is not None and earlier.user not in (None, user):
        earlier = None
    visitor = earlier.visitor if earlier is not None else secrets.token_urlsafe(16)
    claims = VisitorClaims(
        site.site.public_id,
        visitor,
        now,
        now + TOKEN_LIFETIME,
        user,
        site.sessions_generation,
    )
    look = SiteLook(site.site.name, site.site.greeting, site.site.colour, site.site.position)
    token = tokens.issue(site.token_key, claims)
    return Session(token, claims.expires_at, visitor, user is not None, look), 201


async def _visitor() -> tuple[PublicSite, VisitorClaims]:
    """The site and visitor of the request's token; 401 for a token missing, forged,
    expired, revoked or of another site; 403 for an origin the site does not allow."""
    given = request.headers.get("Authorization", "")
    scheme, _, token = given.partition(" ")
    svc = service()
    try:
        if scheme.lower() != "bearer" or not token.strip():
            raise TokenRefused("send the visitor token as Authorization: Bearer <token>")
        # which site: read from the token, trusted only once its signature is checked
        unverified_site = _site_named(token.strip())
        site = await svc.database.run(store.public_site, unverified_site)
        if site is None:
            raise TokenRefused("the visitor token is not valid")
        claims = tokens.check(
            site.token_key,
            token.strip(),
            site=site.site.public_id,
            now=svc.clock.now(),
            generation=site.sessions_generation,
        )
    except TokenRefused as refused:
        # the widget must read the refusal to start a new session: CORS for an origin
        # some site allows (the token cannot say which site it is for)
        origin = _origin()
        if origin is not None and await svc.database.run(store.origin_allowed, origin):
            _allow(origin)
        raise _unauthorized(str(refused)) from None
    _check_origin(site)
    return site, claims


def _site_named(token: str) -> str:
    """The site a token names, unchecked (its signature is checked with the key next)."""
    try:
        payload = token.split(".", 1)[0]
        body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(body["s"])[:40]
    except (ValueError, KeyError, TypeError):
        raise TokenRefused("the visitor token is not valid") from None


def _unauthorized(detail: str) -> ProblemError:
    refused = ProblemError(401, detail)
    refused.headers = {"WWW-Authenticate": "Bearer"}  # type: ignore[attr-defined]
    return refused


def _place(site: PublicSite, claims: VisitorClaims) -> str:
    return place_key(CHANNEL, f"{site.site.public_id}:{claims.visitor}")


@blueprint.post("/widget/chat/stream")
@operation(
    Reply(
        200,
        "An event stream: `token` events, then one `done` (the answer as a visitor sees "
        "it, with its `turn`) or `error` event",
        widget_event_stream,
        "text/event-stream",
    ),
    401, 403, 422, 429, 502, 503,
    body=WidgetQuestion,
    open=True,
)  # fmt: skip
async def widget_question() -> Response:
    """Answer a visitor's question on a site, streamed"""
    svc = service()
    site, claims = await _visitor()
    asked = structure_body(await _body(), WidgetQuestion)
    now = svc.clock.now()
    address = client_address(
        request.remote_addr or "",
        request.headers.getlist("X-Forwarded-For"),
        svc.settings.trusted_proxies,
    )
    counters = question_counters(site.site, claims.visitor, address, now)
    spent = tokens_counter(site.site, now)
    settings = svc.settings
    reserve = question_reserve(
        asked.question, settings.max_context_chars, settings.max_output_tokens
    )
    refused = await svc.database.run(
        store.take_question, site.site.id, counters, spent, reserve, now
    )
    WIDGET_QUESTIONS.labels("taken" if refused is None else refused.name).inc()
    if refused is not None:
        problem = ProblemError(429, refused.message, title="Too many questions")
        problem.headers = {"Retry-After": str(refused.retry_after(now))}  # type: ignore[attr-defined]
        raise problem
    employee = await _answering_role(site)
    visitor = f"{site.site.public_id}:{claims.visitor}"
    question = ChatRequest(
        question=asked.question,
        employee=employee,
        asker=f"{CHANNEL}:{visitor}",
        channel=CHANNEL,
        user_identifier=claims.user,  # {caller}: a verified customer only
    )
    turn = TurnRequest(
        question, CHANNEL, visitor, place=_place(site, claims), idle_minutes=IDLE_MINUTES
    )

    async def count_tokens(answer: ChatAnswer) -> None:
        """The tokens the question reserved, settled to what it spent."""
        used = sum(u.total for u in (answer.usage, answer.check_usage) if u is not None)
        if spent is not None and used != reserve:
            await svc.database.run(store.add_tokens, site.site.id, spent, used - reserve)

    try:
        return await stream_turn(turn, WidgetWire(), after=count_tokens)
    except Exception as error:  # before the first event: said plainly, the log has why
        problem = problem_for(error)
        if problem.status < 500:
            raise
        log.warning("a widget question on site %s failed: %s", site.site.public_id, error)
        plain = ProblemError(problem.status, VISITOR_FAILURE, title=problem.title)
        plain.headers = getattr(problem, "headers", {})  # type: ignore[attr-defined]
        raise plain from None


@attrs.frozen
class WidgetWire(ChatWire):
    """/widget/chat/stream's events: as /chat/stream's, the answer as a visitor sees it
    (``visitor_answer``) and a failure without the providers tried (the log has them)."""

    def failed(self, error: Exception) -> bytes:
        problem = problem_for(error)
        shown = visitor_problem(problem.status, problem.title)
        return sse("error", converter.unstructure(shown))

    def done(self, answer: ChatAnswer, streamed: bool) -> list[bytes]:
        said = [] if streamed or not answer.answer else [self.token(answer.answer)]
        return [*said, sse("done", converter.unstructure(visitor_answer(answer)))]


async def _answering_role(site: PublicSite) -> Role | None:
    """The site's role while it answers customers on the web; else (none chosen, or it
    was deleted or taken off the web since) the web's default customer role, as a text
    channel's (``support``)."""
    return chosen_role(await service().database.run(_roles), site.site.role, CHANNEL)


def _roles(conn: psycopg.Connection) -> list[Role]:
    return [stored.role for stored in employees_store.list_roles(conn)]


@blueprint.get("/widget/conversation")
@operation(Reply(200, "The visitor's conversation going on", WidgetConversation), 401, 403,
           open=True)  # fmt: skip
async def widget_conversation() -> WidgetConversation:
    """The visitor's conversation going on, to show again after a reload"""
    svc = service()
    site, claims = await _visitor()
    found = await svc.database.run(_current, _place(site, claims), svc.clock.now(), True)
    if found is None:
        return WidgetConversation(None, [])
    turns = [
        converter.structure(
            {name: turn.get(name) for name in ("turn", "question", "answer", "citations")}
            | {"feedback": turn.get("feedback"), "author": turn.get("author") or "ai"},
            WidgetTurn,
        )
        for turn in found["turns"]
    ]
    return WidgetConversation(found["id"], turns)


@blueprint.get("/widget/events")
@operation(
    Reply(
        200,
        "An event stream that does not end: a person's `message` and the `mode` of the "
        "visitor's conversation, each with its `id:`",
        visitor_event_stream,
        "text/event-stream",
    ),
    401, 403, 422,
    query=EventsQuery,
    headers=LAST_EVENT_ID,
    open=True,
)  # fmt: skip
async def widget_events() -> Response:
    """The visitor's conversation live: a person's messages, and its mode

    Only the visitor's own conversations (at the place the token names: the one going on,
    or one their next question begins). The stream ends when the token expires: the
    widget renews it and reads on from its last event (?after= or Last-Event-ID)."""
    svc = service()
    site, claims = await _visitor()
    after = resume_point()
    left = (claims.expires_at - svc.clock.now()).total_seconds()
    return await event_stream(after, _visitor_event, place=_place(site, claims), seconds=left)


def _visitor_event(event: FeedEvent) -> bytes | None:
    """What a visitor sees of an event of their conversation: a person's message, a
    move of its mode (their own questions and the answers they had already)."""
    if event.kind == "mode":
        return sse_event("mode", {"mode": event.mode}, event.id)
    if event.author != "person" or event.turn is None:
        return None
    message = {"turn": event.turn, "author": event.author, "answer": event.answer or ""}
    return sse_event("message", message, event.id)


def _current(
    conn: psycopg.Connection, key: str, now: datetime, going_on: bool
) -> dict[str, Any] | None:
    """The visitor's conversation: the one going on (``going_on``), or the latest."""
    since = now - timedelta(minutes=IDLE_MINUTES) if going_on else None
    found = conversations.find_continued(conn, CHANNEL, key, since)
    return None if found is None else conversations.get_conversation(conn, found)


@blueprint.post("/widget/feedback")
@operation(Reply(204, "Stored on the turn"), 401, 403, 404, 422, body=WidgetFeedback, open=True)
async def widget_feedback() -> tuple[str, int]:
    """A visitor's thumbs up or down on an answer of their conversation

    With an optional comment (only with up or down); null takes the rating back, and its
    comment with it."""
    svc = service()
    site, claims = await _visitor()
    given = structure_body(await _body(), WidgetFeedback)
    found = await svc.database.run(_latest_id, _place(site, claims))
    stored = found is not None and await rate(svc, found, given.turn, given.rating, given.comment)
    if not stored:
        raise ProblemError(404, f"no answer {given.turn} in your conversation", field="turn")
    return "", 204


def _latest_id(conn: psycopg.Connection, key: str) -> int | None:
    return conversations.find_continued(conn, CHANNEL, key)
