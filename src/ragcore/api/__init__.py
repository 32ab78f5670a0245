"""The HTTP API's shapes: what each route reads and answers, as attrs classes, one
converter for them, and the OpenAPI document derived from both (``operations``)."""
