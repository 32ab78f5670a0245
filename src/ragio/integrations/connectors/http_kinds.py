"""The connectors of the HTTP kinds, by ``source_type``: for ``connector_for`` to merge
with the database kinds' (kept apart so each part of the connectors lands on its own)."""

from __future__ import annotations

from ragio.integrations.connectors import hubspot, rest, salesforce, sheets, shopify, stripe
from ragio.integrations.connectors.base import ConnectorFactory

HTTP_CONNECTORS: dict[str, ConnectorFactory] = {
    "rest_api": rest.connect,
    "hubspot": hubspot.connect,
    "salesforce": salesforce.connect,
    "shopify": shopify.connect,
    "google_sheets": sheets.connect,
    "stripe": stripe.connect,
}
