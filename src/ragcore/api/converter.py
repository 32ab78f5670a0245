"""The one converter between the API's JSON and its attrs shapes: times as ISO 8601,
and a body with a field its shape does not have is refused, never half-read."""

from __future__ import annotations

from datetime import datetime

import cattrs

converter = cattrs.Converter(forbid_extra_keys=True)
converter.register_unstructure_hook(datetime, datetime.isoformat)
converter.register_structure_hook(
    datetime,
    lambda value, _: value if isinstance(value, datetime) else datetime.fromisoformat(value),
)
