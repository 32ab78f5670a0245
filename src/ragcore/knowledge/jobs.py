"""Large uploads ingested in the background, as jobs (``ragcore.jobs``) of kind
``INGEST``: which upload becomes one."""

from __future__ import annotations

INGEST = "ingest"  # the kind of job: the file is kept in the database until it is read


def ingested_as_job(size_bytes: int, threshold: int) -> bool:
    """An upload larger than INGEST_JOB_BYTES (``threshold``) is ingested as a job."""
    return size_bytes > threshold
