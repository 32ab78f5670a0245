"""One connector per ``source_type`` (``ragcore.integrations.kinds``); ``connector_for``
picks it."""

from __future__ import annotations

from collections.abc import Mapping

from ragio.integrations.connectors import (
    csv_file,
    hubspot,
    rest,
    salesforce,
    sheets,
    shopify,
    stripe,
)
from ragio.integrations.connectors.base import (
    Connector,
    ConnectorFactory,
    Reach,
    SourceFailed,
)
from ragio.integrations.connectors.databases import connect_mysql, connect_postgresql
from ragio.integrations.connectors.mongodb import connect_mongodb

#: the connector of each kind (a test checks that every kind has one). Each factory
#: takes ``(credentials, reach)``: the kind's fields with their defaults, and the Reach.
FACTORIES: dict[str, ConnectorFactory] = {
    "mysql": connect_mysql,
    "postgresql": connect_postgresql,
    "mongodb": connect_mongodb,
    "rest_api": rest.connect,
    "hubspot": hubspot.connect,
    "salesforce": salesforce.connect,
    "shopify": shopify.connect,
    "google_sheets": sheets.connect,
    "stripe": stripe.connect,
    "csv": csv_file.connect,
}


def connector_for(source_type: str, credentials: Mapping[str, str], reach: Reach) -> Connector:
    """The connector of ``source_type`` with ``credentials`` (their defaults filled in by
    the caller); SourceFailed saying so when this version has no connector for it."""
    factory = FACTORIES.get(source_type)
    if factory is None:
        raise SourceFailed(f"no connector for source_type {source_type!r}")
    return factory(credentials, reach)
