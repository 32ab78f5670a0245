"""ragio: everything that touches the world, on Trio.

The HTTP app, the effect runner, PostgreSQL, the providers and the CLI. Rules
live in ragcore; this package feeds them inputs and executes their effects.
"""
