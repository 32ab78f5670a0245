"""Every route's real answers, successes and problems alike, are what the served
/openapi.json says they are: the status is declared for the route, and the body is
valid against the declared schema (JSON Schema 2020-12, its $refs resolved in the
document)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from ragio.http.app import create_app
from ragio.http.spec import app_routes

SPEC_URI = "urn:ragchat:openapi"
KEY = "the-api-key"
FAQ = "# Opening hours\n\nThe shop opens at 9 am and closes at 6 pm on weekdays."


@pytest.fixture
def settings_overrides():
    # a webhook target and workflow URLs on loopback, where nothing listens: an action
    # approved is sent and fails (a 502 problem), a workflow is stored and never called
    return {
        "service_api_key": KEY,
        "webhook_targets": "crm=https://127.0.0.1:9/in",
        "actions_allow_private_targets": True,
        "workflow_allow_private_targets": True,
        "addon_encryption_key": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
        "ingest_job_bytes": 1000,  # a larger upload is a background job
        "graph_enabled": "true",  # the knowledge graph, in PostgreSQL
    }


class Checker:
    """Sends requests and checks each answer against the served document."""

    def __init__(self, api: httpx.AsyncClient, spec: dict[str, Any], service: Any):
        self.api = api
        self.spec = spec
        self.service = service  # to write what a route shows (an event of a live view)
        self.registry = Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(spec))
        self.seen: set[tuple[str, str]] = set()
        self.problems = 0

    async def send(self, method: str, template: str, path: str | None = None, **kw: Any):
        response = await self.api.request(method, path or template, **kw)
        self.check(method, template, response)
        return response

    def check(self, method: str, template: str, response: httpx.Response) -> None:
        self.seen.add((template, method))
        where = f"{method} {template} answered {response.status_code}"
        declared = self.spec["paths"][template][method.lower()]["responses"]
        assert str(response.status_code) in declared, f"{where}, which is not declared"
        answer = declared[str(response.status_code)]
        if "$ref" in answer:  # the Problem response
            assert response.headers["content-type"] == "application/problem+json", where
            self.problems += 1
            media_type = "application/problem+json"
            body = response.json()
        elif "content" not in answer:
            assert response.content == b"", where
            return
        else:
            sent = response.headers["content-type"]
            media_types = [media for media in answer["content"] if sent.startswith(media)]
            assert media_types, f"{where} as {sent}, which is not declared"
            [media_type] = media_types
            body = _body(media_type, response)
        pointer = response_pointer(self.spec, method, template, response.status_code, media_type)
        errors = schema_errors(self.registry, pointer, body)
        assert not errors, f"{where}: {errors}"


def response_pointer(
    spec: dict[str, Any], method: str, template: str, status: int | str, media_type: str
) -> str:
    """The JSON pointer, in the served document, of the schema of ``method template``'s
    ``status`` answer as ``media_type`` (the shared Problem's for a problem)."""
    answer = spec["paths"][template][method.lower()]["responses"][str(status)]
    if "$ref" in answer:
        return "/components/schemas/Problem"
    return _pointer(
        "paths", template, method.lower(), "responses", str(status), "content", media_type, "schema"
    )


def schema_errors(
    registry: Registry, pointer: str, instance: Any, validator_class: Any = Draft202012Validator
) -> list[str]:
    """Where ``instance`` breaks the schema at ``pointer`` in the registered document."""
    validator = validator_class({"$ref": f"{SPEC_URI}#{pointer}"}, registry=registry)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _pointer(*parts: str) -> str:
    return "".join(f"/{_escape(part)}" for part in parts)


def _body(media_type: str, response: httpx.Response) -> Any:
    if media_type == "application/json":
        return response.json()
    if media_type == "text/event-stream":
        events = []
        for block in response.text.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            event = {"event": fields["event"], "data": json.loads(fields["data"])}
            events.append(event | ({"id": fields["id"]} if "id" in fields else {}))
        return events
    return response.text


async def test_every_route_answers_as_the_served_schema_says(api, service):
    keyed = httpx.AsyncClient(base_url=api.base_url, headers={"X-API-Key": KEY}, timeout=30)
    async with keyed:
        checker = Checker(keyed, (await keyed.get("/openapi.json")).json(), service)
        await exercise_every_route(checker)
    # the problem every route behind the key shares, for a client without it
    checker.check("GET", "/usage", await api.get("/usage"))
    routes = {(path, method) for path, method, _ in app_routes(create_app(service))}
    assert routes - checker.seen == set(), "routes never checked against the schema"
    assert checker.problems >= 20


async def exercise_every_route(c: Checker) -> None:
    """Each route's successes and a problem or two."""
    await c.send("GET", "/openapi.json")
    await c.send("GET", "/health")
    await c.send("GET", "/health/live")
    await c.send("GET", "/health/ready")
    await c.send("GET", "/")
    await c.send("GET", "/console/console.js")
    await c.send("GET", "/console/console.css")
    await c.send("GET", "/console/setup.js")
    await c.send("GET", "/docs")
    await c.send("GET", "/console/docs.js")
    await c.send("GET", "/console/docs.css")
    await c.send("GET", "/metrics")
    await c.send("GET", "/usage")

    # documents
    added = await c.send("POST", "/documents", json={"name": "faq.md", "text": FAQ})
    await c.send("POST", "/documents", json={"name": "faq.md", "text": FAQ})  # duplicate
    upload = {"file": ("hours.txt", b"Closed on Sundays.", "text/plain")}
    await c.send("POST", "/documents", files=upload)
    await c.send("POST", "/documents", json={"name": "x", "text": "y", "colour": "red"})
    await c.send("POST", "/documents", content=b"name=x", headers={"content-type": "text/csv"})
    doc = f"/documents/{added.json()['id']}"
    await c.send("GET", "/documents")
    await c.send("GET", "/documents", params={"q": "faq", "limit": 1})
    await c.send("GET", "/documents", params={"limit": 0})
    new_version = {"name": "faq.md", "text": FAQ + " New.", "replace": True}
    taken = await c.send("POST", "/documents", json={**new_version, "replace": False})
    assert taken.status_code == 409
    replaced = await c.send("POST", "/documents", json=new_version)
    doc = f"/documents/{replaced.json()['id']}"
    large = {"file": ("large.md", (FAQ + "\n\n").encode() * 20, "text/markdown")}
    job = (await c.send("POST", "/documents", files=large)).headers["location"]
    with trio.fail_after(60):
        while (await c.send("GET", "/documents/jobs/{id}", job)).json()["status"] != "done":
            await trio.sleep(0.05)
    broken = {"file": ("broken.pdf", b"%PDF-1.4\n1 0 obj" + b" " * 2000, "application/pdf")}
    job = (await c.send("POST", "/documents", files=broken)).headers["location"]
    with trio.fail_after(60):
        while (await c.send("GET", "/documents/jobs/{id}", job)).json()["status"] != "failed":
            await trio.sleep(0.05)
    await c.send("GET", "/documents/jobs/{id}", "/documents/jobs/999")
    await c.send("GET", "/jobs")
    await c.send("GET", "/jobs", params={"kind": "ingest", "status": "failed", "limit": 1})
    await c.send("GET", "/jobs", params={"kind": "nightly"})
    await c.send("GET", "/jobs/{id}", job.replace("/documents", ""))
    await c.send("GET", "/jobs/{id}", "/jobs/999")
    await c.send("DELETE", "/jobs/{id}", job.replace("/documents", ""))  # failed: 409
    await c.send("DELETE", "/jobs/{id}", "/jobs/999")
    await c.send("GET", "/documents/{id}", doc)
    await c.send("GET", "/documents/{id}", "/documents/abc")
    await c.send("PATCH", "/documents/{id}", doc, json={"name": "faq-renamed.md"})
    await c.send("PATCH", "/documents/{id}", doc, json={"name": ""})
    await c.send("PATCH", "/documents/{id}", "/documents/999", json={"name": "x.md"})
    await c.send("DELETE", "/documents/{id}", doc)
    await c.send("DELETE", "/documents/{id}", doc)

    # chat (the document above was deleted: another one to answer from)
    await c.send("POST", "/documents", json={"name": "hours.md", "text": FAQ + " Always."})
    asked = await c.send("POST", "/chat", json={"question": "When does the shop open?"})
    conversation = asked.json()["conversation_id"]
    await c.send("POST", "/chat", json={"question": "and close?", "conversation_id": conversation})
    await c.send("POST", "/chat", json={"question": "Hours?", "conversation_id": 12345})
    await c.send("POST", "/chat", params={"question": "Hours?", "role": "nobody"})
    await c.send("POST", "/chat", json={"question": ""})
    await c.send("POST", "/chat/stream", json={"question": "When does the shop open?"})
    await c.send("POST", "/chat/stream", json={"question": "x" * 5000})

    # the OpenAI-compatible API (its errors are OpenAI-shaped: tests/io/test_openai_api.py)
    await c.send("GET", "/v1/models")
    await c.send("GET", "/v1/models/{model}", "/v1/models/ragchat-support")
    question = {"role": "user", "content": "When does the shop open?"}
    await c.send("POST", "/v1/chat/completions", json={"model": "ragchat", "messages": [question]})

    # conversations
    await c.send("GET", "/conversations")
    await c.send("GET", "/conversations", params={"channel": "chat", "limit": "1"})
    await c.send("GET", "/conversations", params={"since": "soon"})
    feedback = "/conversations/{id}/turns/{turn}/feedback"
    rated = f"/conversations/{conversation}/turns/2/feedback"
    await c.send("POST", feedback, rated, json={"rating": "up"})
    await c.send("POST", feedback, rated, json={"rating": "down", "comment": "Not 9 am."})
    await c.send("POST", feedback, rated, json={"rating": "sideways"})
    await c.send("POST", feedback, rated, json={"rating": None, "comment": "never mind"})
    await c.send("POST", feedback, f"/conversations/{conversation}/turns/9/feedback", json={})
    await c.send("POST", feedback, "/conversations/12345/turns/1/feedback", json={"rating": None})
    await c.send("GET", "/conversations/{id}", f"/conversations/{conversation}")
    await c.send("GET", "/conversations/{id}", "/conversations/12345")
    # the handoff: a person writes (a conversation on /chat has no customer to write to)
    mode, messages = "/conversations/{id}/mode", "/conversations/{id}/messages"
    await c.send("POST", mode, f"/conversations/{conversation}/mode", json={"mode": "human"})
    await c.send("GET", "/conversations", params={"mode": "human"})
    await c.send("GET", "/conversations", params={"mode": "asleep"})
    await c.send("POST", mode, f"/conversations/{conversation}/mode", json={"mode": "ai"})
    await c.send("POST", mode, f"/conversations/{conversation}/mode", json={"mode": "off"})
    await c.send("POST", mode, "/conversations/12345/mode", json={"mode": "closed"})
    hello = {"text": "Hello from a person"}
    await c.send("POST", messages, f"/conversations/{conversation}/messages", json=hello)
    await c.send("POST", messages, f"/conversations/{conversation}/messages", json={"text": " "})
    await c.send("POST", messages, "/conversations/12345/messages", json=hello)
    # the owner's answers, and the insights (the questions above were refused)
    for path in ("/insights/gaps", "/insights/top-questions"):
        await c.send("GET", path)
        await c.send("GET", path, params={"channel": "chat", "limit": "1", "answered": "true"})
        await c.send("GET", path, params={"since": "2026-02-01", "until": "2026-01-01"})
    owner = {"questions": ["Do you deliver?", "Can you bring it home?"], "answer": "Yes."}
    written = await c.send("POST", "/answers", json=owner)
    await c.send("POST", "/answers", json=owner)  # 409: its questions are answered
    await c.send("POST", "/answers", json={"questions": [], "answer": "No."})
    one, answer_id = "/answers/{id}", written.json()["id"]
    await c.send("GET", "/answers")
    await c.send("GET", "/answers", params={"limit": "0"})
    await c.send("GET", one, f"/answers/{answer_id}")
    await c.send("GET", one, "/answers/12345")
    await c.send("PATCH", one, f"/answers/{answer_id}", json={"answer": "Yes, within 10 km."})
    await c.send("PATCH", one, f"/answers/{answer_id}", json={"answer": None})
    await c.send("PATCH", one, "/answers/12345", json={})
    faq = "question,answer\nCan I pay by card?,Yes.\n"
    await c.send("POST", "/answers/import", json={"format": "csv", "text": faq})
    await c.send("POST", "/answers/import", json={"format": "json", "text": "[{}]"})
    clash = json.dumps(
        [
            {"questions": ["Do you deliver?", "Can I pay by card?"], "answer": "x"},
        ]
    )
    await c.send("POST", "/answers/import", json={"format": "json", "text": clash})
    await c.send("DELETE", one, f"/answers/{answer_id}")
    await c.send("DELETE", one, f"/answers/{answer_id}")

    # the knowledge graph
    names = "# Suppliers\n\nThe Widget X is made by Foo Ltd in Leeds."
    await c.send("POST", "/documents", json={"name": "suppliers.md", "text": names})
    entities = await c.send("GET", "/graph/entities", params={"q": "foo"})
    [shop, *_] = entities.json()["entities"]
    await c.send("GET", "/graph/entities", params={"limit": "0"})
    await c.send("GET", "/graph/entities/{id}", f"/graph/entities/{shop['id']}")
    await c.send("GET", "/graph/entities/{id}", "/graph/entities/0000000000000000")

    # employees, memory and context
    await c.send("GET", "/employees")
    await c.send("GET", "/employees/{role}", "/employees/support")
    await c.send("GET", "/employees/{role}", "/employees/nobody")
    created = {"display_name": "Baker", "personality": "Warm and brief."}
    await c.send("PATCH", "/employees/{role}", "/employees/baker", json=created)
    await c.send("PATCH", "/employees/{role}", "/employees/baker", json={"autonomy": "semi"})
    await c.send("PATCH", "/employees/{role}", "/employees/baker", json={"salary": 1})
    memory = "/employees/baker/memory"
    item = await c.send("POST", "/employees/{role}/memory", memory, json={"text": "Rye on Fridays"})
    await c.send("POST", "/employees/{role}/memory", memory, json={"text": "rye on  fridays"})
    await c.send("GET", "/employees/{role}/memory", memory, params={"query": "bread"})
    await c.send("GET", "/employees/{role}/memory", memory, params={"limit": "0"})
    context = "/employees/baker/context"
    await c.send("GET", "/employees/{role}/context", context, params={"query": "bread?"})
    await c.send("GET", "/employees/{role}/context", context)
    one = f"{memory}/{item.json()['id']}"
    await c.send("DELETE", "/employees/{role}/memory/{id}", one)
    await c.send("DELETE", "/employees/{role}/memory/{id}", one)

    # profile
    await c.send("GET", "/profile")
    await c.send("PATCH", "/profile", json={"tone": "friendly", "language": "en"})
    await c.send("PATCH", "/profile", json={"learned_summary": "mine"})
    await c.send("POST", "/profile/learn")

    # automation workflows
    workflows = "/automation-workflows"
    new = {"name": "crm", "webhook_url": "http://127.0.0.1:9/hook", "channels": ["telegram"]}
    workflow = await c.send("POST", workflows, json=new)
    await c.send("POST", workflows, json={**new, "channels": ["voice"]})
    await c.send("GET", workflows, params={"channel": "telegram", "is_active": "true"})
    await c.send("GET", workflows, params={"is_active": "maybe"})
    one = f"{workflows}/{workflow.json()['id']}"
    await c.send("GET", f"{workflows}/{{id}}", one)
    await c.send("PATCH", f"{workflows}/{{id}}", one, json={"is_active": False})
    await c.send("POST", f"{workflows}/{{id}}/test", f"{one}/test")  # nothing listens: not ok
    await c.send("DELETE", f"{workflows}/{{id}}", one)
    await c.send("GET", f"{workflows}/{{id}}", one)
    await c.send("POST", f"{workflows}/{{id}}/test", f"{one}/test")  # 404

    # data sources: a CSV, its test, a sync (in the background) and a user's records
    sources = "/integrations"
    await c.send("GET", f"{sources}/kinds")
    csv = {"name": "crm", "source_type": "csv", "content": "email,plan\na@x.io,pro\n"}
    source = await c.send("POST", sources, json=csv)
    await c.send("POST", sources, json=csv)  # the name is taken
    await c.send("POST", sources, json={**csv, "host": "db"})
    upload = {"file": ("crm.csv", b"email\nb@x.io\n", "text/csv")}
    await c.send("POST", sources, data={"name": "upload"}, files=upload)
    await c.send("GET", sources)
    one = f"{sources}/{source.json()['id']}"
    await c.send("GET", f"{sources}/{{id}}", one)
    await c.send("GET", f"{sources}/{{id}}", f"{sources}/0")
    await c.send("PATCH", f"{sources}/{{id}}", one, json={"user_field": "email"})
    await c.send("PATCH", f"{sources}/{{id}}", one, json={"content": None})
    await c.send("POST", f"{sources}/{{id}}/test", f"{one}/test")
    await c.send("POST", f"{sources}/{{id}}/sync", f"{one}/sync")
    await c.send("POST", f"{sources}/{{id}}/sync", f"{one}/sync")  # 409 while it runs, or 202
    records = f"{sources}/{{id}}/records"
    await c.send("GET", records, f"{one}/records", params={"user": "a@x.io", "limit": "5"})
    await c.send("GET", records, f"{one}/records")

    # live-data actions on that source: created, refused, dry-run, logged, deleted
    live = "/live-actions"
    by_email = {"name": "plan", "source_id": source.json()["id"], "template": "email = {email}"}
    action = await c.send("POST", live, json=by_email)
    await c.send("POST", live, json=by_email)  # the name is taken
    await c.send("POST", live, json={**by_email, "name": "x", "template": "email = '{email}'"})
    await c.send("GET", live)
    act = f"{live}/{action.json()['id']}"
    await c.send("GET", f"{live}/{{id}}", act)
    await c.send("GET", f"{live}/{{id}}", f"{live}/0")
    await c.send("PATCH", f"{live}/{{id}}", act, json={"triggers": ["my plan"]})
    await c.send("PATCH", f"{live}/{{id}}", act, json={"channels": ["sms"]})
    dry = f"{live}/{{id}}/dry-run"
    await c.send("POST", dry, f"{act}/dry-run", json={"message": "I am a@x.io"})
    await c.send("POST", dry, f"{act}/dry-run")  # no e-mail: 422
    await c.send("GET", f"{live}/runs", params={"limit": "1", "action_id": "1"})
    await c.send("GET", f"{live}/runs", params={"limit": "0"})
    await c.send("DELETE", f"{live}/{{id}}", act)
    await c.send("DELETE", f"{live}/{{id}}", act)
    await c.send("DELETE", f"{sources}/{{id}}", one)
    await c.send("DELETE", f"{sources}/{{id}}", one)

    # autonomy and actions: held for the owner, then approved (the send fails) or rejected
    await c.send("GET", "/autonomy")
    await c.send("POST", "/autonomy", json={"mode": "semi"})
    await c.send("POST", "/autonomy", json={"mode": "always"})
    webhook = {"kind": "webhook", "target": "crm", "data": {"order": 7}}
    held = await c.send("POST", "/actions", json=webhook)
    other = await c.send("POST", "/actions", json=webhook)
    await c.send("POST", "/actions", json={"kind": "email", "to": "a@example.com"})
    await c.send("POST", "/actions", json={**webhook, "role": "nobody"})
    await c.send("GET", "/actions/{id}", f"/actions/{held.json()['id']}")
    await c.send("GET", "/actions/{id}", "/actions/nothing")
    await c.send("GET", "/autonomy/pending")
    approve = "/autonomy/pending/{id}/approve"
    await c.send("POST", approve, approve.format(id=held.json()["id"]))
    await c.send("POST", approve, approve.format(id=held.json()["id"]))
    reject = "/autonomy/pending/{id}/reject"
    await c.send("POST", reject, reject.format(id=other.json()["id"]))
    await c.send("POST", reject, reject.format(id="ZZZZZZZZZZ"))
    await c.send("POST", "/actions", json={"kind": "webhook", "target": "nowhere"})
    await c.send("GET", "/autonomy/log", params={"limit": "2"})
    await c.send("GET", "/autonomy/log", params={"limit": "many"})

    # voice calls, and the webhooks: unsigned requests are refused
    await c.send("GET", "/voice/calls")
    await c.send("GET", "/voice/calls", params={"before": "-1"})
    await c.send("POST", "/webhook/telegram", json={"update_id": 1})
    form = {"content": b"From=%2B15551230000&Body=hi"}
    form["headers"] = {"content-type": "application/x-www-form-urlencoded"}
    await c.send("POST", "/webhook/whatsapp", **form)
    await c.send("POST", "/webhook/voice", **form)
    await c.send("POST", "/webhook/discord", json={"type": 1})

    # the chat widget: the owner's sites, then a visitor's session, question and feedback
    shop = "https://shop.example.com"
    sites = "/widget/sites"
    site = (await c.send("POST", sites, json={"name": "shop", "allowed_origins": [shop]})).json()
    await c.send("POST", sites, json={"name": "shop", "allowed_origins": [shop]})  # 409
    await c.send("POST", sites, json={"name": "x", "allowed_origins": ["http://x.example"]})
    await c.send("GET", sites)
    one = f"{sites}/{site['id']}"
    await c.send("GET", f"{sites}/{{id}}", one)
    await c.send("GET", f"{sites}/{{id}}", f"{sites}/999")
    await c.send("PATCH", f"{sites}/{{id}}", one, json={"greeting": "Hello!"})
    await c.send("PATCH", f"{sites}/{{id}}", one, json={"colour": "red"})
    await c.send("POST", f"{sites}/{{id}}/identity-secret", f"{one}/identity-secret")
    await c.send("POST", f"{sites}/{{id}}/identity-secret", f"{sites}/999/identity-secret")
    await c.send("POST", f"{sites}/{{id}}/revoke-sessions", f"{one}/revoke-sessions")
    await c.send("POST", f"{sites}/{{id}}/revoke-sessions", f"{sites}/999/revoke-sessions")
    await c.send("GET", "/widget.js")
    origin = {"Origin": shop}
    started = await c.send(
        "POST", "/widget/sessions", json={"site": site["public_id"]}, headers=origin
    )
    await c.send("POST", "/widget/sessions", json={"site": "site_nothing"}, headers=origin)
    elsewhere = {"Origin": "https://elsewhere.example.net"}
    await c.send("POST", "/widget/sessions", json={"site": site["public_id"]}, headers=elsewhere)
    visitor = {"Authorization": f"Bearer {started.json()['token']}", **origin}
    asked = {"question": "When does the shop open?"}
    await c.send("POST", "/widget/chat/stream", json=asked, headers=visitor)
    await c.send("POST", "/widget/chat/stream", json={"question": ""}, headers=visitor)
    await c.send("POST", "/widget/chat/stream", json=asked, headers=origin)  # 401
    shown = await c.send("GET", "/widget/conversation", headers=visitor)
    await c.send("POST", "/widget/feedback", json={"turn": 1, "rating": "up"}, headers=visitor)
    await c.send("POST", "/widget/feedback", json={"turn": 9, "rating": "up"}, headers=visitor)
    why = {"turn": 1, "rating": "down", "comment": "x" * 1001}
    await c.send("POST", "/widget/feedback", json=why, headers=visitor)

    # a person writes in the visitor's conversation (taking it over), then hands it back;
    # the live views show it
    web = shown.json()["conversation_id"]
    messages, mode = "/conversations/{id}/messages", "/conversations/{id}/mode"
    written = {"text": "Hello, a person here."}
    await c.send("POST", messages, f"/conversations/{web}/messages", json=written)
    await c.send("POST", messages, f"/conversations/{web}/messages", json={"text": ""})
    await c.send("POST", messages, "/conversations/12345/messages", json=written)
    await c.send("POST", mode, f"/conversations/{web}/mode", json={"mode": "ai"})
    await c.send("POST", mode, f"/conversations/{web}/mode", json={"mode": "sideways"})
    polled = {"after": "0", "wait": "0"}  # what happened since the first event, then the end
    owner = await c.send("GET", "/conversations/events", params=polled)
    assert {event["event"] for event in _body("text/event-stream", owner)} == {"turn", "mode"}
    await c.send("GET", "/conversations/events", headers={"Last-Event-ID": "x"})
    await c.send("GET", "/conversations/events", params={"wait": "9999"})
    seen = await c.send("GET", "/widget/events", params=polled, headers=visitor)
    assert {event["event"] for event in _body("text/event-stream", seen)} == {"message", "mode"}
    await c.send("GET", "/widget/events", headers=origin)  # 401
    await c.send("DELETE", f"{sites}/{{id}}", one)
    await c.send("DELETE", f"{sites}/{{id}}", one)

    # API keys: made (shown once), listed, read, changed, revoked; refused input
    made = (await c.send("POST", "/keys", json={"name": "site", "scopes": ["chat"]})).json()
    await c.send("POST", "/keys", json={"name": "site", "scopes": ["chat"]})  # 409
    await c.send("POST", "/keys", json={"name": "x", "scopes": ["root"]})  # 422
    await c.send("GET", "/keys")
    key = f"/keys/{made['id']}"
    await c.send("GET", "/keys/{id}", key)
    await c.send("GET", "/keys/{id}", "/keys/999")
    await c.send("PATCH", "/keys/{id}", key, json={"requests_per_minute": 60})
    await c.send("PATCH", "/keys/{id}", key, json={"scopes": []})  # 422
    await c.send("DELETE", "/keys/{id}", key)
    await c.send("DELETE", "/keys/{id}", "/keys/999")
    await c.send("PATCH", "/keys/{id}", key, json={"name": "revoked"})  # 404: revoked
    # websites as sources: created, crawled (a job), their pages listed, deleted
    websites = "/websites"
    start = {"name": "shop", "start_urls": ["https://shop.example.com/"]}
    website = (await c.send("POST", websites, json=start)).json()
    await c.send("POST", websites, json=start)  # 409
    await c.send("POST", websites, json={"name": "nowhere"})  # 422: no start URL or sitemap
    await c.send("GET", websites)
    page = f"{websites}/{website['id']}"
    await c.send("GET", f"{websites}/{{id}}", page)
    await c.send("GET", f"{websites}/{{id}}", f"{websites}/999")
    await c.send("PATCH", f"{websites}/{{id}}", page, json={"include": ["/help/*"]})
    await c.send("PATCH", f"{websites}/{{id}}", page, json={"max_pages": 0})
    await c.send("POST", f"{websites}/{{id}}/crawl", f"{page}/crawl")
    await c.send("POST", f"{websites}/{{id}}/crawl", f"{websites}/999/crawl")
    await c.send("GET", f"{websites}/{{id}}/pages", f"{page}/pages")
    await c.send("GET", f"{websites}/{{id}}/pages", f"{page}/pages", params={"limit": 0})
    await c.send("GET", "/status")  # with documents, data sources, a website, calls made
    await c.send("DELETE", f"{websites}/{{id}}", page)
    await c.send("DELETE", f"{websites}/{{id}}", page)
