"""Shape the embedding column for the active embedder (see ragcore.knowledge.embedding_space)."""

from __future__ import annotations

import psycopg

from ragcore.knowledge.embedding_space import (
    EmbeddingSpace,
    Keep,
    NeedsReindex,
    Reshape,
    index_kind,
    plan_space,
)
from ragio.db.migrations import advisory_lock


class EmbeddingSpaceMismatch(RuntimeError):
    pass


def recorded_space(conn: psycopg.Connection) -> EmbeddingSpace | None:
    row = conn.execute("SELECT provider, model, dimensions FROM embedding_space").fetchone()
    return EmbeddingSpace(*row) if row else None


def stored_space(conn: psycopg.Connection) -> tuple[EmbeddingSpace | None, int]:
    """The recorded space and how many chunks are stored in it (for ``choose_embedder``)."""
    count = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    return recorded_space(conn), count


def prepare_space(conn: psycopg.Connection, active: EmbeddingSpace) -> None:
    """Make the column fit ``active`` or raise EmbeddingSpaceMismatch naming the fix."""
    with advisory_lock(conn):
        count = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        plan = plan_space(recorded_space(conn), active, count)
        if isinstance(plan, Keep):
            return
        if isinstance(plan, NeedsReindex):
            raise EmbeddingSpaceMismatch(plan.message)
        assert isinstance(plan, Reshape)
        with conn.transaction():
            reshape(conn, plan.space)


def reshape(conn: psycopg.Connection, space: EmbeddingSpace) -> None:
    """Retype the embedding column and rebuild its HNSW index; record ``space``. The role
    memory's vectors belong to the old space: they are cleared, and each item is embedded
    again from its text when next searched (ragio.employees.memory). So are the vectors of
    recorded questions, which then stop counting towards learned patterns, and those of
    the owner's answers' questions and of customers' questions (ragio.answers)."""
    dims = int(space.dimensions)  # DDL cannot take parameters; an int is safe to format
    conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
    conn.execute(f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({dims})")
    if index_kind(dims) == "vector":
        conn.execute(
            "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)"
        )
    else:
        conn.execute(
            "CREATE INDEX chunks_embedding_hnsw ON chunks "
            f"USING hnsw ((embedding::halfvec({dims})) halfvec_cosine_ops)"
        )
    conn.execute("UPDATE role_memory SET embedding = NULL WHERE embedding IS NOT NULL")
    conn.execute("UPDATE role_interactions SET embedding = NULL WHERE embedding IS NOT NULL")
    # the owner's answers' questions are embedded again before the next match
    # (ragio.answers.handlers), the customers' questions when next grouped
    conn.execute("UPDATE owner_answer_questions SET embedding = NULL WHERE embedding IS NOT NULL")
    conn.execute("DELETE FROM question_vectors")
    conn.execute(
        """INSERT INTO embedding_space (provider, model, dimensions) VALUES (%s, %s, %s)
           ON CONFLICT (only_row) DO UPDATE
           SET provider = excluded.provider, model = excluded.model,
               dimensions = excluded.dimensions""",
        (space.provider, space.model, dims),
    )
