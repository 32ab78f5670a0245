"""The answers the docs show are the answers the service gives. Every ```json block of
README.md and docs/api.md is tied, by an HTML comment right before it, to what it shows:

- ``<!-- example: POST /documents 201 -->``: an answer of that operation and status;
- ``<!-- example: POST /actions request -->``: a request body of that operation;
- ``<!-- example: problem -->``: a problem+json body of no route in particular;
- ``<!-- example: workflow call -->``: the body a workflow receives;

with ``, abbreviated`` when it leaves something out (a bare ``…`` in a list: more items;
in an object, or a ``"…": "…"`` member: other members) and ``, lines`` for one JSON
value a line. A block without a tie fails, so no example goes in unchecked. Each is
valid against the schema the running service serves for it, and the answers a test
can produce cheaply are produced: the example has the members of a real answer, at
every depth (the values may differ). The README's quick start is run and its answer
compared whole, as are the /chat and /chat/stream examples of docs/api.md. The scores
the docs state follow the fusion constant (``RRF_K``)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import httpx
import psycopg
import pytest
import trio
from jsonschema import Draft202012Validator, validators
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from ragcore.knowledge.retrieval import RRF_K
from ragcore.workflows.payload import workflow_body
from tests.io.test_api_schema import SPEC_URI, _pointer, response_pointer, schema_errors
from tests.io.test_docs_lists import ROOT, _doc, _section

#: a chunk both rankings put first (the examples search a knowledge base of one document)
BEST_SCORE = 2 / (RRF_K + 1)


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(text: str, language: str) -> list[str]:
    """The text of each fenced block of ``language`` ("": none named), in order."""
    blocks, fence, lines = [], None, []
    for line in text.splitlines(keepends=True):
        if not line.startswith("```"):
            lines.append(line)
        elif fence is None:
            fence, lines = line[3:].strip(), []
        else:
            if fence == language:
                blocks.append("".join(lines))
            fence = None
    return blocks


def _quick_start() -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The README quick start's document (the JSON body it posts), its question and the
    answer the README shows."""
    text = _section(_readme(), "## Quick start")
    [commands] = [b for b in _blocks(text, "sh") if "/documents" in b and "/chat" in b]
    [body] = re.findall(r"/documents .*?-d '(\{.*?\})'", commands, re.DOTALL)
    [url] = re.findall(r"'(127\.0\.0\.1:8000/chat\?[^']*)'", commands)
    [question] = parse_qs(urlsplit("http://" + url).query)["question"]
    [shown] = _blocks(text.split("The answer quotes the document and cites it:", 1)[1], "json")[:1]
    return json.loads(body), question, json.loads(shown)


async def _asked(api: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    document, question, _ = _quick_start()
    stored = await api.post("/documents", json=document)
    assert stored.status_code == 201, stored.text
    answered = await api.post("/chat", params={"question": question})
    assert answered.status_code == 200, answered.text
    return question, answered.json()


async def test_the_readme_quick_start_answers_as_the_readme_shows(api):
    _, _, shown = _quick_start()
    _, answer = await _asked(api)
    assert shown == answer, (
        f"README.md's answer is out of date; the service's: {json.dumps(answer)}"
    )


async def test_the_chat_examples_in_api_md_are_the_answer_the_service_gives(api):
    """The /chat example and the /chat/stream ``done`` event: the same answer, field for
    field (the conversation's id aside: the example's conversation is not the first)."""
    question, answer = await _asked(api)
    text = _doc("api.md")
    [chat] = _blocks(_section(text, "## POST /chat"), "json")[:1]
    shown = json.loads(chat)
    assert shown == {**answer, "conversation_id": shown["conversation_id"]}

    async with api.stream("POST", "/chat/stream", params={"question": question}) as streamed:
        events = (await streamed.aread()).decode()
    [done] = re.findall(r"^event: done\ndata: (.*)$", events, re.MULTILINE)
    [stream_block] = [b for b in _blocks(_section(text, "## POST /chat/stream"), "") if "done" in b]
    [shown_done] = re.findall(r"^event: done\ndata: (.*)$", stream_block, re.MULTILINE)
    real, shown = json.loads(done), json.loads(shown_done)
    assert shown == {**real, "conversation_id": shown["conversation_id"]}


def test_the_scores_the_docs_state_follow_the_fusion_constant():
    """api.md's "at most 2/N ≈ x" is 2 / (RRF_K + 1), and every score an example shows is
    that best one (at the precision it is shown with), but an owner's answer's."""
    text = _doc("api.md")
    [(denominator, approximately)] = re.findall(r"at most 2/(\d+) ≈ (0\.\d+)", text)
    assert int(denominator) == RRF_K + 1
    assert approximately == f"{BEST_SCORE:.4f}"
    # the knowledge graph's list weighs GRAPH_WEIGHT: at most GRAPH_WEIGHT / (RRF_K + 1)
    assert {int(n) for n in re.findall(r"`GRAPH_WEIGHT`/(\d+)", text)} == {RRF_K + 1}
    for name, doc in (("README.md", _readme()), ("api.md", text)):
        for found in re.finditer(r'"score": ([0-9.]+)', doc):
            if '"the owner\'s answer"' in doc[found.start() - 300 : found.start()]:
                continue  # an owner's answer's citation: its score is the similarity
            shown = found.group(1)
            digits = len(shown.split(".")[1])
            assert shown == str(round(BEST_SCORE, digits)) or float(shown) == BEST_SCORE, (
                f"{name} shows a score of {shown}: with RRF_K = {RRF_K}, a chunk both "
                f"rankings put first scores {BEST_SCORE}"
            )


# ---------------------------------------------------------------- every JSON example

#: what a tie may say; the rest of the comment is its flags
TIE = re.compile(
    r"(?P<operation>(?P<method>GET|POST|PUT|PATCH|DELETE) (?P<path>/\S*) "
    r"(?P<what>[1-5]\d\d|request))|(?P<kind>problem|workflow call)"
)
FLAGS = {"abbreviated", "lines"}
MORE = "…"  # a member or an item left out
#: members whose keys are data (a record's fields, the values bound), not the API's
DATA = {"values", "rows", "record", "data", "context", "daily_overrides", "monthly_overrides"}
DATA |= {"pages", "links_not_followed"}  # a crawl's counts: by outcome, by why not followed


@attrs.frozen
class Example:
    where: str  # file:line
    tie: str  # the comment's text, "" when there is none
    text: str

    @property
    def shows(self) -> str:
        """What it is tied to, without the flags: ``POST /documents 201``, ``problem``."""
        return self.tie.split(",")[0].strip()

    @property
    def flags(self) -> set[str]:
        return {flag.strip() for flag in self.tie.split(",")[1:]}

    def values(self) -> list[Any]:
        """The JSON it shows (one a line with ``lines``), a left-out part as ``"…"``
        members in objects and dropped from lists."""
        chunks = self.text.splitlines() if "lines" in self.flags else [self.text]
        return [json.loads(_left_out(chunk)) for chunk in chunks if chunk.strip()]


def _examples() -> list[Example]:
    found = []
    for name, path in (("README.md", ROOT / "README.md"), ("docs/api.md", ROOT / "docs/api.md")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        fenced = False
        for number, line in enumerate(lines):
            if not line.startswith("```"):
                continue
            fenced = not fenced
            if not fenced or line.strip() != "```json":
                continue
            before = [above.strip() for above in lines[:number] if above.strip()]
            tie = re.fullmatch(r"<!-- example: (.*) -->", before[-1] if before else "")
            end = next(i for i in range(number + 1, len(lines)) if lines[i].startswith("```"))
            text = "".join(lines[number + 1 : end])
            found.append(Example(f"{name}:{number + 2}", tie.group(1) if tie else "", text))
    return found


def _left_out(text: str) -> str:
    """JSON for an example with ``…`` outside its strings: a ``"…": "…"`` member in an
    object; nothing in a list (its other items)."""
    out: list[str] = []
    brackets: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            brackets.append(char)
        elif char in "]}":
            brackets.pop()
        elif char == MORE:
            if brackets and brackets[-1] == "{":
                out.append(f'"{MORE}": "{MORE}"')
            else:
                while out and out[-1] in " \n,":
                    out.pop()
            continue
        out.append(char)
    return "".join(out)


def _has_left_out(value: Any) -> bool:
    if isinstance(value, dict):
        return MORE in value or any(_has_left_out(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_left_out(v) for v in value)
    return False


def test_every_json_example_in_the_docs_is_tied_to_what_it_shows():
    """A comment says what each block shows, in words this test reads; ``abbreviated``
    when, and only when, the block leaves something out."""
    untied, wrong = [], []
    examples = _examples()
    for example in examples:
        if not TIE.fullmatch(example.shows) or not example.flags <= FLAGS:
            untied.append(f"{example.where}: {example.tie or 'no <!-- example: … --> before it'}")
            continue
        try:
            values = example.values()
        except json.JSONDecodeError as error:
            wrong.append(f"{example.where}: not JSON ({error})")
            continue
        shortened = _left_out(example.text) != example.text or any(_has_left_out(v) for v in values)
        if shortened != ("abbreviated" in example.flags):
            fix = "add ', abbreviated' to" if shortened else "drop ', abbreviated' from"
            wrong.append(f"{example.where}: {fix} its tie")
    assert not untied, "json blocks not tied to what they show: " + "; ".join(untied)
    assert not wrong, "; ".join(wrong)
    assert len(examples) >= 45


async def test_every_json_example_is_valid_against_the_served_schema(api):
    spec = (await api.get("/openapi.json")).json()
    registry = Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(spec))
    failures = []
    for example in _examples():
        if example.shows == "workflow call":
            continue  # not the API's: checked against the code that sends it
        pointer = _pointer_of(spec, example.shows)
        if pointer is None:
            failures.append(f"{example.where}: {example.shows} is not in /openapi.json")
            continue
        for value in example.values():
            errors = schema_errors(registry, pointer, value, Abbreviated)
            failures += [f"{example.where} ({example.shows}): {error}" for error in errors]
    assert not failures, "\n".join(failures)


def _pointer_of(spec: dict[str, Any], shows: str) -> str | None:
    if shows == "problem":
        return "/components/schemas/Problem"
    method, template, what = shows.split()
    operation = spec["paths"].get(template, {}).get(method.lower())
    if operation is None:
        return None
    if what == "request":
        if "requestBody" not in operation:
            return None
        return _pointer("paths", template, method.lower(), "requestBody") + (
            "/content/application~1json/schema"
        )
    if what not in operation["responses"]:
        return None
    return response_pointer(spec, method, template, what, "application/json")


def _lenient(keyword: str) -> Any:
    """The keyword's check, for an object with a ``"…"`` member as for one with the
    members it shows and those it leaves out (their presence unchecked)."""
    check = Draft202012Validator.VALIDATORS[keyword]

    def lenient(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(instance, dict) and MORE in instance:
            if keyword in ("required", "minProperties"):
                return
            instance = {k: v for k, v in instance.items() if k != MORE}
        yield from check(validator, value, instance, schema)

    return lenient


Abbreviated = validators.extend(
    Draft202012Validator,
    {k: _lenient(k) for k in ("required", "minProperties", "additionalProperties", "properties")},
)


def _key_differences(shown: Any, real: Any, at: str = "") -> list[str]:
    """Where the example's members differ from the real answer's, at every depth: an
    abbreviated object's must be among them; a list's items are compared with the real
    list's first item."""
    if isinstance(shown, dict) and isinstance(real, dict):
        keys = set(shown) - {MORE}
        differences = []
        if MORE in shown and not keys <= set(real):
            differences.append(f"{at or '.'}: {sorted(keys - set(real))} are not in the answer")
        elif MORE not in shown and keys != set(real):
            differences.append(
                f"{at or '.'}: shows {sorted(keys - set(real))} beyond the answer, "
                f"lacks {sorted(set(real) - keys)}"
            )
        for key in sorted(keys & set(real) - DATA):
            differences += _key_differences(shown[key], real[key], f"{at}.{key}")
        return differences
    if isinstance(shown, list) and isinstance(real, list) and real:
        return [
            difference
            for i, item in enumerate(shown)
            for difference in _key_differences(item, real[min(i, len(real) - 1)], f"{at}[{i}]")
        ]
    return []


# ---------------------------------------------------------------- against real answers

KEY = "the-docs-key"
#: examples no cheap request produces: the schema check alone holds them
NOT_PRODUCED = {
    "POST /chat 503",  # every answering provider failing
    "GET /voice/calls 200",  # a phone call (an empty list has no items to compare)
    "POST /actions request",  # a request: its schema admits no other member
    "POST /conversations/{id}/turns/{turn}/feedback request",  # as that one
}
REAL_SETTINGS = {
    "service_api_key": KEY,
    "addon_encryption_key": "Hvcd1a2y0cS3oRNrTqjJ0aZtqS0hLqLkLz4gQ3qD2zU=",
    "ingest_job_bytes": 1000,  # a larger upload is a background job
    "graph_enabled": "true",
    "usage_ledger": "true",
    "budget_daily_tokens": 100_000,
    "budget_role_daily_overrides": "sales=50",
    "chatops_webhook_url": "https://chat.example.com/hooks/ops",
}


def _body_of(api_md: str, heading: str, prefix: str) -> dict[str, Any]:
    """The JSON body of the first curl command under ``heading`` whose -d starts so."""
    [body] = [
        b
        for b in re.findall(r"-d '(\{.*?\})'", _section(api_md, heading), re.DOTALL)
        if b.startswith(prefix)
    ][:1]
    return json.loads(body.replace("'\"'\"'", "'"))


class Answers:
    """Sends requests and keeps each JSON answer under ``METHOD template status``, and
    each problem under ``problem`` too."""

    def __init__(self, client: httpx.AsyncClient, seen: dict[str, list[Any]]):
        self.client = client
        self.seen = seen

    async def send(self, method: str, template: str, path: str | None = None, **kw: Any):
        response = await self.client.request(method, path or template, **kw)
        if response.headers.get("content-type", "").startswith("application/"):
            body = response.json()
            self.seen.setdefault(f"{method} {template} {response.status_code}", []).append(body)
            if response.headers["content-type"] == "application/problem+json":
                self.seen.setdefault("problem", []).append(body)
        return response


@pytest.mark.parametrize("settings_overrides", [REAL_SETTINGS])
async def test_every_example_has_the_members_of_the_real_answer(api, database_url):
    """Each example a request here produces has the members of the service's answer to it
    (of one of them, when several answers share its operation and status)."""
    keyed = httpx.AsyncClient(base_url=api.base_url, headers={"X-API-Key": KEY}, timeout=30)
    async with keyed:
        seen: dict[str, list[Any]] = {}
        await _produce(Answers(keyed, seen), Answers(api, seen), database_url)
    examples = _examples()
    differences, unproduced = [], set()
    for example in examples:
        if example.shows == "workflow call":
            [shown] = example.values()
            real = json.loads(workflow_body("telegram", "hi", "hello", {}))
            differences += [f"{example.where}: {d}" for d in _key_differences(shown, real)]
            continue
        real = seen.get(example.shows)
        if real is None:
            unproduced.add(example.shows)
            continue
        for shown in example.values():
            found = [_key_differences(shown, one) for one in real]
            if all(found):
                closest = min(found, key=len)
                differences.append(f"{example.where} ({example.shows}): {'; '.join(closest)}")
            elif _is_problem(example) and shown not in real:
                # the request is the one the docs describe: the problem is the same, whole
                nearest = [one for one in real if one.get("field") == shown.get("field")]
                differences.append(
                    f"{example.where} ({example.shows}): the service says {nearest or real}"
                )
    assert not differences, "examples unlike the real answer:\n" + "\n".join(differences)
    assert unproduced == NOT_PRODUCED


def _is_problem(example: Example) -> bool:
    """A problem+json example: tied as one, or to a 4xx or 5xx answer."""
    return example.shows == "problem" or example.shows.split()[-1][0] in "45"


async def _produce(c: Answers, anyone: Answers, database_url: str) -> None:
    """One request (or a few) for each example docs/api.md shows."""
    text = _doc("api.md")
    document, question, _ = _quick_start()
    await anyone.send("GET", "/documents")  # 401
    await anyone.send("GET", "/health")  # the status alone
    await c.send("GET", "/health")

    # documents: stored, the same again, a new version, refused, a background job
    await c.send("POST", "/documents", json=document)
    await c.send("POST", "/documents", json=document)
    newer = {**document, "text": document["text"] + "\n\nExchanges are free."}
    await c.send("POST", "/documents", json=newer)  # 409: replace was not asked for
    await c.send("POST", "/documents", json={**newer, "replace": True})
    await c.send("POST", "/documents", json={**document, "replace": True})
    clip = {"file": ("clip.mp4", b"\x00\x00\x00\x18ftypmp42", "video/mp4")}
    await c.send("POST", "/documents", files=clip)
    prices = b"sku,product,price\nA-100,Blue mug,12 EUR\nA-200,Red mug,14 EUR\n"
    upload = {"file": ("prices.csv", prices, "text/csv")}
    stored = await c.send("POST", "/documents", files=upload)
    await c.send("POST", "/documents", files=upload)
    await c.send("GET", "/documents", params={"q": "returns", "limit": 1})
    await c.send("GET", "/documents/{id}", f"/documents/{stored.json()['id']}")
    renamed = {"name": "price-list.csv"}
    await c.send("PATCH", "/documents/{id}", f"/documents/{stored.json()['id']}", json=renamed)
    large = {"file": ("catalogue.md", b"# Catalogue\n\n" + b"A blue mug. " * 100, "text/markdown")}
    job = (await c.send("POST", "/documents", files=large)).headers["location"]
    with trio.fail_after(30):
        while (await c.send("GET", "/documents/jobs/{id}", job)).json()["status"] != "done":
            await trio.sleep(0.05)
    await c.send("GET", "/jobs")
    await c.send("DELETE", "/jobs/{id}", job.replace("/documents", ""))  # done: 409
    # a crawl's job (of a site whose address is refused: its page fails, as a result shows)
    site = {"name": "shop", "start_urls": ["http://127.0.0.1:9/"]}
    crawled = (await c.send("POST", "/websites", json=site)).json()["id"]
    crawl = (await c.send("POST", "/websites/{id}/crawl", f"/websites/{crawled}/crawl")).json()
    with trio.fail_after(30):
        while (await c.send("GET", "/jobs/{id}", f"/jobs/{crawl['job_id']}")).json()[
            "status"
        ] != "done":
            await trio.sleep(0.05)
    queued, running = _jobs_to_cancel(database_url)
    await c.send("DELETE", "/jobs/{id}", f"/jobs/{queued}")
    await c.send("DELETE", "/jobs/{id}", f"/jobs/{running}")

    # chat: answered, followed up, refused, not found
    asked = await c.send("POST", "/chat", params={"question": question})
    conversation = asked.json()["conversation_id"]
    follow_up = {"question": "and for shoes?", "conversation_id": conversation}
    await c.send("POST", "/chat", json=follow_up)
    await c.send("POST", "/chat", json={})
    await c.send("POST", "/chat", params={"question": question, "role": "lawyer"})
    german = {"question": "Wie lange dauert der Versand nach Japan?", "role": "support"}
    await c.send("POST", "/chat", json=german)
    completion = {"model": "ragchat", "messages": [{"role": "user", "content": question}]}
    await c.send("POST", "/v1/chat/completions", json=completion)
    await c.send("GET", "/conversations", params={"channel": "chat", "limit": 2})
    feedback = "/conversations/{id}/turns/{turn}/feedback"
    rated = f"/conversations/{conversation}/turns/1/feedback"
    await c.send("POST", feedback, rated, json={"rating": "up", "comment": "Clear, thanks."})
    await c.send("POST", feedback, rated, json={"rating": "sideways"})  # 422
    await c.send("GET", "/conversations/{id}", f"/conversations/{conversation}")
    # a person writes to a website visitor (their page reads it: nothing to send), then
    # into the same conversation once it is closed
    with psycopg.connect(database_url) as conn:
        [(visitor,)] = conn.execute(
            """INSERT INTO conversations (channel, started_at, updated_at)
               VALUES ('web', now(), now()) RETURNING id"""
        ).fetchall()
    messages = "/conversations/{id}/messages"
    hello = {"text": "Hi, Ann here: your parcel left today."}
    await c.send("POST", messages, f"/conversations/{visitor}/messages", json=hello)
    await c.send("POST", "/conversations/{id}/mode", f"/conversations/{visitor}/mode",
                 json={"mode": "closed"})  # fmt: skip
    await c.send("POST", messages, f"/conversations/{visitor}/messages", json=hello)  # 409
    # a gap, the owner's answer to it, and a refused FAQ
    parking = ["Is there parking near the shop?", "Where can I park my car when I visit?"]
    for asked in parking:
        await c.send("POST", "/chat", json={"question": asked})
    await c.send("GET", "/insights/gaps")
    owner = {"questions": parking, "answer": "Yes: our car park is behind the shop."}
    await c.send("POST", "/answers", json=owner)
    await c.send("POST", "/chat", json={"question": "Is there any parking near the shop?"})
    faq = "question,answer\nDo you deliver?,Yes.\nCan I pay by card?,\n"
    await c.send("POST", "/answers/import", json={"format": "csv", "text": faq})  # 422

    # the knowledge graph
    suppliers = "# Suppliers\n\nThe Widget X is manufactured by Foo Ltd at its plant in Leeds."
    await c.send("POST", "/documents", json={"name": "suppliers.md", "text": suppliers})
    owners = "# Owners\n\nFoo Ltd was acquired by Bar Inc in 2021."
    await c.send("POST", "/documents", json={"name": "owners.md", "text": owners})
    entities = await c.send("GET", "/graph/entities", params={"q": "foo"})
    entity = entities.json()["entities"][0]["id"]
    await c.send("GET", "/graph/entities/{id}", f"/graph/entities/{entity}")

    # employees, their memory and context, the profile
    await c.send("GET", "/employees/{role}", "/employees/support")
    lawyer = _body_of(text, "## PATCH /employees/{role}", '{"display_name"')
    await c.send("PATCH", "/employees/{role}", "/employees/tax_lawyer_bot", json=lawyer)
    memory = _body_of(text, "## Role memory: /employees/{role}/memory", '{"text"')
    await c.send("POST", "/employees/{role}/memory", "/employees/support/memory", json=memory)
    unstorable = {"text": "Mention the guarantee.", "tags": ["refunds", "a\u0000"]}
    await c.send("POST", "/employees/{role}/memory", "/employees/support/memory", json=unstorable)
    context = {"query": "Can I return my order?"}
    path = "/employees/support/context"
    await c.send("GET", "/employees/{role}/context", path, params=context)
    profile = _body_of(text, "## The business profile: /profile", '{"description"')
    await c.send("PATCH", "/profile", json=profile)
    await c.send("POST", "/profile/learn")

    # automation workflows: refused targets, one stored
    workflows = "/automation-workflows"
    workflow = _body_of(text, "## Automation workflows: /automation-workflows", '{"name"')
    for refused in ("http://127.1/hook", "http://169.254.169.254/latest"):
        await c.send("POST", workflows, json={**workflow, "webhook_url": refused})
    await c.send("POST", workflows, json={**workflow, "webhook_url": "https://93.184.216.34/c/1"})
    with psycopg.connect(database_url) as conn:  # saved before the address rules: refused
        [(old,)] = conn.execute(
            """INSERT INTO automation_workflows (name, webhook_url, channels)
               VALUES ('old', 'http://127.0.0.1:9/hook', ARRAY['telegram']) RETURNING id"""
        ).fetchall()
    await c.send("POST", f"{workflows}/{{id}}/test", f"{workflows}/{old}/test")

    # data sources and live-data actions
    sources = "/integrations"
    await c.send("GET", f"{sources}/kinds")
    shop = _body_of(text, "## Data sources: /integrations", '{"name"')
    source = (await c.send("POST", sources, json=shop)).json()["id"]
    await c.send("POST", sources, json={**shop, "name": "LAN", "host": "192.168.1.20"})
    live = "/live-actions"
    heading = "## Live-data actions: /live-actions"
    status = _body_of(text, heading, '{"name": "Order status"')
    await c.send("POST", live, json={**status, "source_id": source})
    cancel = _body_of(text, heading, '{"name": "Cancel"')
    await c.send("POST", live, json={**cancel, "source_id": source})
    csv = {"name": "crm", "source_type": "csv", "content": "email,plan\nada@example.com,pro\n"}
    crm = (await c.send("POST", sources, json=csv)).json()["id"]
    plan = {"name": "Plan", "source_id": crm, "template": "email = {email}"}
    action = (await c.send("POST", live, json=plan)).json()["id"]
    dry_run = f"{live}/{action}/dry-run"
    said = {"message": "which plan is ada@example.com on?"}
    await c.send("POST", f"{live}/{{id}}/dry-run", dry_run, json=said)
    await c.send("GET", f"{live}/runs", params={"limit": 1})

    # an action held for the owner
    await c.send("POST", "/autonomy", json={"mode": "semi"})
    held = await c.send("POST", "/actions", json={"kind": "chatops", "text": "New lead: Ann"})
    await c.send("GET", "/actions/{id}", f"/actions/{held.json()['id']}")

    # the budget spent: a limited answer, and the usage
    spend(database_url, 100_000)
    await c.send("POST", "/chat", params={"question": question})
    await c.send("GET", "/usage")
    await c.send("GET", "/status")  # the calls made, the website whose crawl failed


def _jobs_to_cancel(database_url: str) -> tuple[int, int]:
    """An ingestion job queued for later (no process claims it now) and one another
    process (``other:1:x``) runs."""
    with psycopg.connect(database_url) as conn:
        [(queued,)] = conn.execute(
            """INSERT INTO jobs (kind, payload, max_attempts, run_after)
               VALUES ('ingest', '{}', 5, now() + interval '1 hour') RETURNING id"""
        ).fetchall()
        [(running,)] = conn.execute(
            """INSERT INTO jobs (kind, status, payload, attempts, max_attempts, claimed_by,
                                 started_at, heartbeat_at, progress_total)
               VALUES ('ingest', 'running', '{}', 1, 5, 'other:1:x', now(), now(), 1830)
               RETURNING id"""
        ).fetchall()
    return queued, running


def spend(database_url: str, tokens: int) -> None:
    """A settled call of ``tokens`` in the usage ledger, as a provider's would be."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO usage_records (at, role, state, reserved_tokens, provider, model,
                                          prompt_tokens, completion_tokens)
               VALUES (now(), NULL, 'settled', 0, 'openai', 'gpt-4o-mini', %s, 0)""",
            (tokens,),
        )
