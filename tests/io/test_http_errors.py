"""Bad requests get a problem+json that says what to change, and write nothing."""

from __future__ import annotations

import psycopg
import pytest

PROBLEM = "application/problem+json"


def assert_problem(response, status: int, detail_part: str = "") -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail"} <= set(body)
    assert detail_part in body["detail"]
    assert "Traceback" not in response.text
    return body


def count_rows(database_url: str) -> tuple[int, int]:
    with psycopg.connect(database_url) as conn:
        return (
            conn.execute("SELECT count(*) FROM documents").fetchone()[0],
            conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
        )


async def test_unknown_route_is_404(api):
    assert_problem(await api.get("/nothing-here"), 404, "/nothing-here")


async def test_wrong_method_is_405_with_allow(api):
    response = await api.get("/chat")
    assert_problem(response, 405)
    assert "POST" in response.headers["allow"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        # a route of its own beside a pattern it also fits (/live-actions/<id>)
        ("PATCH", "/live-actions/runs", {"GET"}),
        ("DELETE", "/live-actions/runs", {"GET"}),
        ("POST", "/live-actions/runs", {"GET"}),
        ("PUT", "/live-actions/42", {"GET", "PATCH", "DELETE"}),
        ("DELETE", "/documents", {"GET", "POST"}),
        ("PATCH", "/health/ready", {"GET"}),
        ("POST", "/documents/jobs/7", {"GET"}),
    ],
)
async def test_a_known_path_asked_with_another_method_is_405_naming_those_it_takes(
    api, method, path, allowed
):
    response = await api.request(method, path)
    assert_problem(response, 405, f"{method} is not allowed on {path}")
    assert {m.strip() for m in response.headers["allow"].split(",")} - {"HEAD", "OPTIONS"} == (
        allowed
    )


async def test_malformed_json_is_400(api, database_url):
    response = await api.post(
        "/documents",
        content=b'{"name": "a.md", "text": ',
        headers={"content-type": "application/json"},
    )
    assert_problem(response, 400, "not valid JSON")
    assert count_rows(database_url) == (0, 0)


async def test_a_json_body_that_is_not_an_object_is_400(api):
    assert_problem(await api.post("/documents", json=["a", "b"]), 400, "JSON object")


async def test_missing_question_is_422_naming_it(api):
    body = assert_problem(await api.post("/chat"), 422, "required")
    assert body["field"] == "question"


async def test_a_question_over_4000_characters_is_refused(api):
    body = assert_problem(await api.post("/chat", json={"question": "x" * 4001}), 422, "4000")
    assert body["field"] == "question"


async def test_an_unknown_field_is_refused_not_ignored(api):
    response = await api.post("/chat", json={"question": "hi?", "rol": "support"})
    assert_problem(response, 422, "rol")


async def test_an_unknown_role_is_404_listing_the_known_ones(api):
    assert_problem(
        await api.post("/chat", params={"question": "hi?", "role": "pirate"}), 404, "support"
    )


async def test_a_malformed_role_is_422_with_the_rule(api):
    body = assert_problem(
        await api.post("/chat", params={"question": "hi?", "role": "Bad Role"}), 422
    )
    assert "lowercase letters" in body["detail"]


async def test_a_known_role_is_accepted_and_echoed(api):
    response = await api.post("/chat", params={"question": "hi?", "role": "support"})
    assert response.status_code == 200
    assert response.json()["role"] == "support"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "hello"}, "name"),
        ({"name": "a.md"}, "text"),
        ({"name": "a.md", "text": "  "}, "text"),
        ({"name": "a.md", "text": 5}, "text"),
    ],
)
async def test_bad_documents_are_422_and_write_nothing(api, database_url, body, field):
    problem = assert_problem(await api.post("/documents", json=body), 422)
    assert problem["field"] == field
    assert count_rows(database_url) == (0, 0)


async def test_a_body_without_json_content_type_is_415(api):
    response = await api.post(
        "/documents", content=b"name=a", headers={"content-type": "text/plain"}
    )
    assert_problem(response, 415, "application/json")


class TestWithASmallUploadLimit:
    @pytest.fixture
    def settings_overrides(self):
        return {"max_upload_bytes": 2000}

    async def test_a_body_over_the_limit_is_413_and_writes_nothing(self, api, database_url):
        response = await api.post("/documents", json={"name": "big.md", "text": "word " * 1000})
        assert_problem(response, 413, "MAX_UPLOAD_BYTES")
        assert count_rows(database_url) == (0, 0)


async def test_an_embedding_failure_leaves_no_partial_document(api, service, database_url):
    class Broken:
        name = "broken"
        space = service.embedder.space

        async def embed(self, texts, purpose):
            raise RuntimeError("embedding provider down")

    service.embedder = Broken()
    response = await api.post("/documents", json={"name": "a.md", "text": "Some words."})
    assert_problem(response, 500)
    assert "embedding provider down" not in response.text
    assert count_rows(database_url) == (0, 0)
