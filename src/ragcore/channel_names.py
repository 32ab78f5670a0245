"""The service's one vocabulary of channels: where a question can come from. Every list
of channels elsewhere is one of these, or made of them."""

#: the messaging platforms: their webhooks, senders and replies (``ragcore.channels``);
#: the owner approves held actions on one (``ragcore.actions.autonomy``)
TEXT_CHANNELS = ("telegram", "whatsapp", "discord")
#: the chat widget on the owner's website (docs/widget.md): a visitor asks over HTTP, the
#: service sends nothing to it unasked, so it is no text channel
WEB = "web"
#: where customers write: a conversation on one is a customer's (an action it proposes
#: always meets the gate), and they are the channels workflows follow
CUSTOMER_CHANNELS = (*TEXT_CHANNELS, WEB)
#: where a question is asked, as live-data actions see it: the HTTP API (``chat``,
#: POST /chat and /v1 alike), the text channels, the widget (``{caller}``: the visitor's
#: verified user id, or none) and the phone
ASKING_CHANNELS = ("chat", *CUSTOMER_CHANNELS, "voice")
#: where a conversation is recorded: as ``ASKING_CHANNELS``, the OpenAI-compatible API
#: (``openai``) kept apart from /chat, since its clients send the whole history back
CONVERSATION_CHANNELS = ("chat", "openai", *CUSTOMER_CHANNELS, "voice")
