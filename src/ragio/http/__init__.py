"""The HTTP API: a Quart-Trio app served by Hypercorn's Trio worker."""
