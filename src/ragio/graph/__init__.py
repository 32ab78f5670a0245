"""The knowledge graph's stores and handlers (``ragcore.knowledge.graph`` has the rules)."""
