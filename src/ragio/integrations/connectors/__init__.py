"""One connector per ``source_type`` (``ragcore.integrations.kinds``); ``connector_for``
picks it."""

from __future__ import annotations

from collections.abc import Mapping

from ragcore.integrations.kinds import KINDS
from ragio.integrations.connectors import csv_file
from ragio.integrations.connectors.base import (
    Connector,
    ConnectorFactory,
    Reach,
    SourceFailed,
)

#: the connector of each kind; a kind not here cannot be tested or synced yet (its test
#: answers ok=false and its sync fails, each saying so). Each module's factory takes
#: ``(credentials, reach)``: the kind's fields with their defaults, and the Reach.
FACTORIES: dict[str, ConnectorFactory] = {
    "csv": csv_file.connect,
}


def connector_for(source_type: str, credentials: Mapping[str, str], reach: Reach) -> Connector:
    """The connector of ``source_type`` with ``credentials`` (their defaults filled in by
    the caller); SourceFailed saying so when this version has no connector for it."""
    factory = FACTORIES.get(source_type)
    if factory is None:
        if source_type in KINDS:
            raise SourceFailed(f"{source_type} data sources cannot be tested or synced yet")
        raise SourceFailed(f"no connector for source_type {source_type!r}")
    return factory(credentials, reach)
