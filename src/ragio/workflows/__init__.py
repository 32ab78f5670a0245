"""Automation workflows on the outside: their table, and the calls made after a reply."""
