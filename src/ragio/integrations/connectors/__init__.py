"""One connector per ``source_type`` (``ragcore.integrations.kinds``); ``connector_for``
picks it."""
