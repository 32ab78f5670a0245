"""Automation workflows: webhooks the owner registers to be called after the AI replies
on a wired text channel or the chat widget (``web``) (SPEC section 6). Definitions,
which fire, the call's body and signature, and when to try again."""
