"""Calling the targets the owner configured (webhook and chat-ops actions, automation
workflows): one pinned POST for all of them (``post``), and the certificates they trust
(``tls``). The address rules are ``ragcore.targets.addresses``."""
