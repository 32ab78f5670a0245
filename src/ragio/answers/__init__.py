"""The owner's answers (ragcore.answers) and the insights into what customers asked
(ragcore.insights): their tables, handlers and the import of an FAQ."""
