"""A change of embedder: refused while old vectors are stored, until `ragchat reindex`;
a key added for answers keeps the stored chunks' embedder."""

from __future__ import annotations

import logging
from typing import NamedTuple

import httpx
import psycopg

from ragcore.knowledge.embedding_space import LOCAL_SPACE, EmbeddingSpace
from ragio.db.embedding_space import recorded_space
from ragio.startup import open_service
from tests.conftest import make_settings
from tests.io.conftest import on_openai, serve_service
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.processes import run_in_process

PARCELS = "# FAQ\n\nParcels leave the warehouse every weekday at noon."


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def runner(monkeypatch, capsys, cwd):
    """`ragchat ARGS` in this process (its start-up, with the local model loaded again,
    would cost more than each command)."""

    def run_cli(*args: str, **settings: object) -> Ran:
        return Ran(*run_in_process(monkeypatch, capsys, *args, cwd=cwd, **settings))

    return run_cli


def index_definition(database_url: str) -> str:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_hnsw'"
        ).fetchone()[0]


def space(database_url: str) -> EmbeddingSpace | None:
    with psycopg.connect(database_url) as conn:
        return recorded_space(conn)


async def test_the_local_embedder_gets_a_384_dimension_hnsw_index(service, database_url):
    assert space(database_url) == EmbeddingSpace("local", "all-MiniLM-L6-v2-onnx-int8", 384)
    assert "hnsw (embedding vector_cosine_ops)" in index_definition(database_url)


async def test_adding_a_key_for_answers_keeps_the_locally_embedded_chunks(
    tmp_path, database_url, serve_fake, nursery, caplog
):
    """The report: chunks ingested with no keys, then OPENAI_API_KEY added; the service
    starts, searches the local vectors, and answers with the OpenAI model."""
    data_dir = tmp_path / "data"
    offline = make_settings(database_url=database_url, data_dir=data_dir)
    async with open_service(offline) as service:
        url, stop = await serve_service(service, nursery)
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            added = await client.post("/documents", json={"name": "faq.md", "text": PARCELS})
            assert added.status_code in (200, 201), added.text
        stop.set()
    assert space(database_url) == LOCAL_SPACE

    fake = await serve_fake(FakeOpenAI(api_key="sk-test", reply="At noon on weekdays [1]."))
    keyed = make_settings(database_url=database_url, data_dir=data_dir, **on_openai(fake))
    with caplog.at_level(logging.INFO, logger="ragio.startup"):
        async with open_service(keyed) as service:
            assert service.embedder.space == LOCAL_SPACE
            url, stop = await serve_service(service, nursery)
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                response = await client.post("/chat", json={"question": "When do parcels leave?"})
            stop.set()
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == "At noon on weekdays [1]."
    [citation] = body["citations"]
    assert citation["document_name"] == "faq.md"
    assert len(fake.requests_to("/v1/chat/completions")) == 1  # answered by the OpenAI model
    assert fake.requests_to("/v1/embeddings") == []  # the question embedded locally
    assert space(database_url) == LOCAL_SPACE  # nothing re-shaped
    logged = [record.getMessage() for record in caplog.records]
    [kept] = [line for line in logged if "as the stored chunks are" in line]
    assert "EMBEDDING_PROVIDER=openai" in kept and "ragchat reindex" in kept


def test_a_changed_embedder_with_chunks_stored_is_refused_until_reindexed(
    tmp_path, database_url, monkeypatch, capsys
):
    run_cli = runner(monkeypatch, capsys, tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text("# FAQ\n\nParcels leave the warehouse every weekday at noon.")
    assert run_cli("ingest", str(docs), database_url=database_url).returncode == 0

    # The same knowledge base, now asked to use another embedder: OpenAI at 3,072 dimensions.
    switched = {
        "database_url": database_url,
        "embedding_provider": "openai",
        "openai_api_key": "sk-test",
        "openai_base_url": "http://127.0.0.1:9/v1",
    }
    refused = run_cli("ask", "When do parcels leave?", **switched)
    assert refused.returncode == 2
    stored = "1 chunks embedded with local model 'all-MiniLM-L6-v2-onnx-int8' at 384"
    assert stored in refused.stderr
    assert "ragchat reindex" in refused.stderr
    assert "EMBEDDING_PROVIDER=local" in refused.stderr  # the way to keep them
    assert space(database_url).provider == "local"  # nothing changed
    assert "Traceback" not in refused.stderr


def test_reindex_reembeds_everything_and_moves_to_halfvec_above_2000(
    tmp_path, database_url, monkeypatch, capsys
):
    run_cli = runner(monkeypatch, capsys, tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text("# FAQ\n\nParcels leave the warehouse every weekday at noon.")
    assert run_cli("ingest", str(docs), database_url=database_url).returncode == 0
    # answering as a role embeds its memory and records the question for learning
    ask = ("ask", "--role", "support", "When do parcels leave?")
    assert run_cli(*ask, database_url=database_url).returncode == 0
    assert role_vector_sizes(database_url) == {("role_memory", 384), ("role_interactions", 384)}
    with psycopg.connect(database_url, autocommit=True) as conn:
        # Pretend the stored vectors came from a larger model, as after a switch back to local.
        for table in ("role_memory", "role_interactions"):
            conn.execute(f"UPDATE {table} SET embedding = array_fill(0.001, ARRAY[3072])::vector")
        conn.execute("DROP INDEX chunks_embedding_hnsw")
        conn.execute(
            "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector(3072) "
            "USING (array_fill(0.001, ARRAY[3072]))::vector(3072)"
        )
        conn.execute(
            "CREATE INDEX chunks_embedding_hnsw ON chunks "
            "USING hnsw ((embedding::halfvec(3072)) halfvec_cosine_ops)"
        )
        conn.execute("UPDATE embedding_space SET provider='genai', model='gemini', dimensions=3072")

    refused = run_cli("ask", "When do parcels leave?", database_url=database_url)
    assert refused.returncode == 2 and "ragchat reindex" in refused.stderr

    result = run_cli("reindex", database_url=database_url)
    assert result.returncode == 0, result.stderr
    assert "re-embedded 1 chunks with local model" in result.stdout
    assert space(database_url).dimensions == 384
    assert "vector_cosine_ops" in index_definition(database_url)

    # the old space's role vectors are cleared, not left to be compared with new ones
    assert role_vector_sizes(database_url) == {("role_memory", None), ("role_interactions", None)}

    asked = run_cli("ask", "When do parcels leave?", database_url=database_url)
    assert asked.returncode == 0, asked.stderr
    assert "every weekday at noon. [1]" in asked.stdout
    assert run_cli(*ask, database_url=database_url).returncode == 0
    # memory embedded again from its text
    assert ("role_memory", 384) in role_vector_sizes(database_url)
    assert ("role_memory", None) not in role_vector_sizes(database_url)


def role_vector_sizes(database_url: str) -> set[tuple[str, int | None]]:
    """The sizes of the support role's memory and recorded questions' vectors (None: none)."""
    with psycopg.connect(database_url) as conn:
        return {
            (table, size)
            for table in ("role_memory", "role_interactions")
            for (size,) in conn.execute(
                f"SELECT DISTINCT vector_dims(embedding) FROM {table} WHERE role = 'support'"
            ).fetchall()
        }
