"""The chat widget on the owner's website (docs/widget.md): its sites, the visitors'
signed tokens, the quotas and the verified identity of a logged-in customer."""
