"""The HTTP API's shapes: what each route reads and answers, as attrs classes (read and
written by ``ragcore.converter``, described by ``ragcore.schema``), and the OpenAPI
document derived from them (``operations``). The top layer of ragcore: it may use every
area, and none uses it."""
