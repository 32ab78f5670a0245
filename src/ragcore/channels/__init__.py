"""Text channels (Telegram, WhatsApp through the telephony provider, Discord), pure rules.

Each platform module checks its webhook's signature, reads the platform's update shape
into one ``InboundMessage`` and builds the platform's outbound requests; the shared
modules choose the answering role (``routing``) and cut replies to the platforms'
length limits (``replies``). No I/O here: ragio's webhooks and senders do that.
"""

CHANNELS = ("telegram", "whatsapp", "discord")
