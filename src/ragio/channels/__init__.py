"""Text channels on Trio: the platforms' senders, delivery dedupe and answering a message.

The rules (signatures, update shapes, role choice, splitting) are in ``ragcore.channels``;
the webhooks that receive messages are in ``ragio.http.webhooks``.
"""
