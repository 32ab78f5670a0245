"""The owner's answers: curated answers to the questions customers ask, served before any
model is asked when a question matches one closely enough (docs/answers.md)."""
