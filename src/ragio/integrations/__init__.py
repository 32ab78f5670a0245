"""Data sources: encrypted credentials, the connectors, and syncing their records."""
