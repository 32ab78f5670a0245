"""Large uploads ingested in the background, as jobs (``ragcore.jobs``) of kind
``INGEST``: which upload becomes one."""

from __future__ import annotations

from typing import Any

INGEST = "ingest"  # the kind of job: the file is kept in the database until it is read


def ingested_as_job(size_bytes: int, threshold: int) -> bool:
    """An upload larger than INGEST_JOB_BYTES (``threshold``) is ingested as a job."""
    return size_bytes > threshold


def stopped_ingestion(chunks_embedded: int, chunks_total: int) -> dict[str, Any]:
    """What an ingestion cancelled between two embedding batches (or before storing) had
    done: chunks embedded, and no document: it is stored whole or not at all, so nothing
    of it is (the embeddings made are dropped)."""
    return {
        "document": None,
        "chunks_embedded": chunks_embedded,
        "chunks_total": chunks_total,
        "detail": "cancelled before the document was stored: nothing of it was stored",
    }
