"""Outbound actions, run: the effects of ``ragcore.actions`` executed (``handlers``),
their SQL (``store``), the three senders (``https`` for webhook targets and chat-ops,
``mail`` for SMTP), the owner's notifications (``notify``) and YES/NO replies
(``approvals``)."""
