"""Human handoff (docs/handoff.md): a conversation's mode (``modes``), a customer asking
for a person (``asking``), what the customer and the owner are told (``notices``) and the
business's opening hours (``hours``)."""
