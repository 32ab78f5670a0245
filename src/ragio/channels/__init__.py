"""Text channels on Trio: the platforms' senders (over ``outbound``), delivery dedupe
(``updates``) and running the pipeline that answers a message (``conversation``, its
effects executed by ``handlers``).

The rules (signatures, update shapes, role choice, splitting, the conversation itself) are
in ``ragcore.channels``; the webhooks that receive messages are in ``ragio.http.webhooks``.
Outbound actions use ``outbound`` to message the owner; nothing here uses
``ragio.actions``.
"""
