"""The usage ledger on PostgreSQL (the rules are in ragcore.usage)."""
