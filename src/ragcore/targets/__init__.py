"""Targets: the URLs the owner configures for the service to call on its own (webhook and
chat-ops actions, automation workflows), and the rules for which addresses such a call may
connect to (``addresses``). ``ragio.targets`` makes the calls."""
