"""Live data: the owner's actions that query their data sources while a customer waits."""
