"""The knowledge base: turning documents into searchable chunks."""
