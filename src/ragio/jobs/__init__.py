"""Background jobs in PostgreSQL, run by any process that runs jobs (``ragchat serve``
with RUN_JOBS, ``ragchat worker``)."""
