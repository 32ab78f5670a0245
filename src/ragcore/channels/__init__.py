"""Text channels (Telegram, WhatsApp through the telephony provider, Discord), pure rules.

Each platform module checks its webhook's signature, reads the platform's update shape
into one ``InboundMessage`` and builds the platform's outbound requests; the shared
modules choose the answering role (``routing``), cut replies to the platforms'
length limits (``replies``), say which settings each use of a channel needs
(``required``) and how the platforms' APIs are retried (``retries``); ``conversation`` is
the pipeline that answers one message (its effects in ``effects``). No I/O here: ragio's
webhooks, senders and ``ragio.channels.handlers`` do that.
"""

from ragcore.channel_names import TEXT_CHANNELS as CHANNELS

__all__ = ["CHANNELS"]
