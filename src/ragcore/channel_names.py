"""The service's one vocabulary of channels: where a question can come from. Every list
of channels elsewhere is one of these, or made of them."""

#: the messaging platforms: their webhooks, senders and replies (``ragcore.channels``);
#: a conversation on one is a customer's (an action it proposes always meets the gate),
#: the owner approves held actions on one, and they are the channels workflows follow
TEXT_CHANNELS = ("telegram", "whatsapp", "discord")
#: where a question is asked, as live-data actions see it: the HTTP API (``chat``,
#: POST /chat and /v1 alike), the text channels and the phone
ASKING_CHANNELS = ("chat", *TEXT_CHANNELS, "voice")
#: where a conversation is recorded: as ``ASKING_CHANNELS``, the OpenAI-compatible API
#: (``openai``) kept apart from /chat, since its clients send the whole history back
CONVERSATION_CHANNELS = ("chat", "openai", *TEXT_CHANNELS, "voice")
