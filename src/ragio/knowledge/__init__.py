"""The knowledge base on PostgreSQL: storing documents, searching chunks, reading files."""
