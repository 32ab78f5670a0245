"""AI employees on the outside: the roles as stored in PostgreSQL."""
