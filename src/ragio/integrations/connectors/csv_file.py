"""The csv kind: a CSV file uploaded once, its text stored (encrypted) in the ``content``
field. Its rows are its records, the first row naming the columns; the delimiter is
sniffed as for a CSV document (``ragcore.knowledge.formats.csv_rows``). A live action's
search reads them and keeps the rows whose column equals the value (``equal_records``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import trio

from ragcore.errors import InvalidInput
from ragcore.integrations.records import table_records
from ragcore.knowledge.formats import csv_rows
from ragio.integrations.connectors.base import Reach, Record, SourceFailed, equal_records

PAGE_ROWS = 500


class CsvFile:
    def __init__(self, content: str) -> None:
        self.content = content

    async def _records(self) -> tuple[list[str], list[dict[str, str]]]:
        def read() -> tuple[list[str], list[dict[str, str]]]:
            try:
                rows = csv_rows(self.content)
            except InvalidInput as error:
                raise SourceFailed(f"the CSV content {error.message}") from None
            records = table_records(rows)
            return (list(records[0]) if records else []), records

        return await trio.to_thread.run_sync(read)

    async def test(self) -> str:
        columns, records = await self._records()
        if not records:
            raise SourceFailed("the CSV content has no rows under its header row")
        shown = ", ".join(columns[:10]) + (", …" if len(columns) > 10 else "")
        return f"CSV file: {len(records)} rows, {len(columns)} columns ({shown})"

    async def search(self, field: str, value: str, limit: int) -> list[Record]:
        """The rows whose column ``field`` equals ``value`` (at most ``limit``)."""
        _, records = await self._records()
        return equal_records(records, field, value, limit)

    async def pages(self) -> AsyncIterator[list[Record]]:
        _, records = await self._records()
        for start in range(0, len(records), PAGE_ROWS):
            yield list(records[start : start + PAGE_ROWS])


def connect(credentials: Mapping[str, str], reach: Reach) -> CsvFile:
    return CsvFile(credentials.get("content", ""))
