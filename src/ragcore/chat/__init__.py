"""Answering questions: prompts, citations, the offline answerer and the chat pipeline."""
