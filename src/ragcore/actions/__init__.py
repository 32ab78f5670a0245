"""Outbound actions under autonomy (SPEC section 1 rules 12 and 13, section 3's approval
rule): what an action is and what the owner configured it may reach (``kinds``; its
``action_reach`` applies the address rules of ``ragcore.targets`` to webhook and chat-ops
calls), the autonomy setting and the gate (``autonomy``), owner approvals
(``approvals``), proposals read from a role's reply (``proposals``), the statuses an
action goes through (``lifecycle``, one transition table), and the pipelines that submit,
decide and settle actions (``flow``, with its effects in ``effects``).
Nothing here sends anything: ``ragio.actions`` does."""
