"""Answering: the handlers of the chat pipeline's effects."""
