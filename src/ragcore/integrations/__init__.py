"""Data sources: the kinds, their credential fields, and the rules of syncing them."""
