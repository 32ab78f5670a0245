"""PostgreSQL: the embedded server, the connection pool, migrations."""
