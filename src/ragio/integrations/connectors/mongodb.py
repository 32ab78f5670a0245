"""The MongoDB data source: a collection's documents, read in pages by ``_id``.

Driver: pymongo, MongoDB's official one. Its sync client is blocking, so every call runs
in a worker thread (``trio.to_thread.run_sync``); its async client needs asyncio. It
speaks to MongoDB and to servers of its wire protocol alike.

Pagination is by keyset on ``_id`` (``{"_id": {"$gt": last}}`` sorted by ``_id``, 500 a
page), stable and complete to the collection's end, as for the SQL kinds. MongoDB
compares ``$gt`` within one BSON type: a collection whose ``_id`` values mix types (some
ObjectIds, some strings) is read only through the first type's values.

Timeouts: the client's ``serverSelectionTimeoutMS`` (finding a server that answers) and
``connectTimeoutMS`` are ``Reach.timeout``; each find carries it as ``max_time_ms``, which
the server enforces, and ``socketTimeoutMS`` (each read) is a second longer, so that the
server's own reason comes first.

Where: every host of the URL is judged by the address rules
(``ragio.integrations.connectors.addresses``); a plain ``mongodb://`` URL without TLS is
rewritten to the judged addresses, so the driver connects there. Size: documents are
counted as they come (``Capped``): past ``Reach.max_response_bytes`` the cursor is closed.

Documents become JSON-shaped records: an ObjectId as its hex text, Decimal128 as text,
datetimes as ISO 8601 text in UTC, binary as base64 text, nested documents and arrays
converted through, any other BSON type (Timestamp, Regex, Code, MinKey…) as its text.

Reasons: pymongo's own words, on one line, with the URL and its password masked.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

import bson
import pymongo
import pymongo.errors
import trio
from pymongo import uri_parser

from ragcore.integrations.databases import json_shaped, secrets_of, without_secrets
from ragcore.integrations.kinds import KINDS
from ragio.db.source_connections import Lease
from ragio.integrations.connectors.addresses import pinned
from ragio.integrations.connectors.base import (
    Capped,
    Connector,
    Reach,
    Record,
    SourceFailed,
    size_of,
)

PAGE_DOCUMENTS = 500
log = logging.getLogger(__name__)
T = TypeVar("T")


def connect_mongodb(credentials: Mapping[str, str], reach: Reach) -> Connector:
    return MongoCollection(credentials, reach)


def bson_shaped(value: Any) -> Any:
    """A BSON value of no plain Python type as JSON can hold it (``json_shaped``'s other)."""
    if isinstance(value, bson.ObjectId):
        return str(value)
    if isinstance(value, bson.Decimal128):
        return str(value.to_decimal())
    if isinstance(value, bson.DBRef):
        return {"$ref": value.collection, "$id": json_shaped(value.id, bson_shaped)}
    return str(value)


class MongoCollection:
    def __init__(self, credentials: Mapping[str, str], reach: Reach):
        self._url = credentials.get("url", "")
        self._database = credentials.get("database", "")
        self._collection = credentials.get("collection", "")
        self._reach = reach
        secret = [field.name for field in KINDS["mongodb"].fields if field.secret]
        self._secrets = secrets_of(credentials, secret)

    async def test(self) -> str:
        return await self._run(self._test)

    async def pages(self) -> AsyncIterator[list[Record]]:
        client = await self._run(self._client)
        try:
            await self._run(functools.partial(self._check_collection, client))
            last: Any = None
            while True:
                page, last = await self._run(functools.partial(self._page, client, last))
                if page:
                    yield page
                if len(page) < PAGE_DOCUMENTS:
                    return
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(client.close)

    async def find(
        self, filter_: Mapping[str, Any], limit: int, kept: Lease | None = None
    ) -> list[Record]:
        """A live action's read: the documents matching ``filter_`` (its values BSON
        values, as bound), at most ``limit``, the server's ``maxTimeMS`` on it. A failure
        of the query says its error's name and code, never the server's message (it may
        quote the customer's values).

        ``kept``: the source's kept clients (``ragio.db.source_connections``): one is
        taken rather than connecting again (the driver reconnects a client whose server
        went away by itself), and given back after a query that went well; after a
        failure it is closed."""
        taken = await trio.to_thread.run_sync(kept.take) if kept is not None else None
        client = taken if taken is not None else await self._run(self._client)
        found: list[Record] | None = None
        try:
            found = await self._run(functools.partial(self._matching, client, filter_, limit))
            return found
        finally:
            done: Callable[[], None] = client.close
            if found is not None and kept is not None:
                done = functools.partial(kept.give, client)
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(done, abandon_on_cancel=self._reach.abandon_on_cancel)

    def _matching(
        self, client: pymongo.MongoClient[dict[str, Any]], filter_: Mapping[str, Any], limit: int
    ) -> list[Record]:
        found = (
            client[self._database][self._collection]
            .find(dict(filter_))
            .limit(limit)
            .batch_size(limit)
            .max_time_ms(max(1, round(self._reach.timeout * 1000)))
        )
        try:
            documents = self._counted(found)
        except pymongo.errors.OperationFailure as failed:
            # its message may quote the customer's values: the error's name and code only
            name = (failed.details or {}).get("codeName") or type(failed).__name__
            raise SourceFailed(f"the query failed: {name} (code {failed.code})") from None
        return [json_shaped(document, bson_shaped) for document in documents]

    def _counted(self, cursor: Any) -> list[dict[str, Any]]:
        """The documents of ``cursor``, counted as they come (``Capped``): more than
        ``Reach.max_response_bytes`` is a failure, the cursor closed, nothing more read."""
        cap = Capped(self._reach.max_response_bytes)
        documents: list[dict[str, Any]] = []
        with cursor:
            for document in cursor:
                cap.add(size_of(document))
                documents.append(document)
        return documents

    def _client(self) -> pymongo.MongoClient[dict[str, Any]]:
        if not self._url.startswith(("mongodb://", "mongodb+srv://")):
            raise SourceFailed("url must begin with mongodb:// or mongodb+srv://")
        milliseconds = max(1, round(self._reach.timeout * 1000))
        try:
            return pymongo.MongoClient(
                self._pinned_url(),
                serverSelectionTimeoutMS=milliseconds,
                connectTimeoutMS=milliseconds,
                socketTimeoutMS=milliseconds + 1000,  # the server's max_time_ms first
                tz_aware=True,
                appname="ragchat",
            )
        except (ValueError, TypeError, pymongo.errors.ConfigurationError) as bad:
            raise SourceFailed(f"url: {bad}") from None  # secrets masked by _run

    def _pinned_url(self) -> str:
        """The URL with every host judged (``ragio.integrations.connectors.addresses``):
        for a plain ``mongodb://`` URL without TLS each host replaced by the address it
        was judged by, so the driver never looks the name up again. With TLS (the
        certificate names the host) or ``mongodb+srv://`` (the hosts are in DNS) the
        names stay, judged: the driver resolves them itself."""
        try:
            parsed = uri_parser.parse_uri(self._url, connect_timeout=self._reach.timeout)
        except (ValueError, TypeError, pymongo.errors.PyMongoError) as bad:
            raise SourceFailed(f"url: {bad}") from None  # secrets masked by _run
        pins: list[str] = []
        for host, port in parsed["nodelist"]:
            how, where = pinned("url", host, port or 27017, self._reach)
            if how == "socket":
                pins.append(quote(where[0], safe=""))
            else:
                address = where[0]
                pins.append(f"[{address}]:{port}" if ":" in address else f"{address}:{port}")
        options = {key.lower(): value for key, value in parsed["options"].items()}
        if self._url.startswith("mongodb+srv://") or options.get("tls") or options.get("ssl"):
            return self._url
        parts = urlsplit(self._url)
        userinfo, at, _ = parts.netloc.rpartition("@")
        return urlunsplit(parts._replace(netloc=userinfo + at + ",".join(pins)))

    def _test(self) -> str:
        with self._client() as client:
            client.admin.command("ping")
            version = client.admin.command("buildInfo").get("version", "")
            self._check_collection(client)
            self._counted(self._find(client[self._database][self._collection], None, limit=1))
        return f"{f'MongoDB {version}'.strip()}: collection {self._collection} readable"

    def _check_collection(self, client: pymongo.MongoClient[dict[str, Any]]) -> None:
        """A missing collection reads as empty in MongoDB: here it is a failure that says so."""
        names = client[self._database].list_collection_names(
            filter={"name": self._collection}, authorizedCollections=True
        )
        # filtered here too: a server of the wire protocol may ignore the filter
        if self._collection not in names:
            raise SourceFailed(
                f"collection {self._collection} does not exist in database {self._database}"
            )

    def _page(
        self, client: pymongo.MongoClient[dict[str, Any]], last: Any
    ) -> tuple[list[Record], Any]:
        collection = client[self._database][self._collection]
        documents = self._counted(self._find(collection, last, limit=PAGE_DOCUMENTS))
        if not documents:
            return [], last
        return [json_shaped(d, bson_shaped) for d in documents], documents[-1]["_id"]

    def _find(self, collection: Any, after: Any, *, limit: int) -> Any:
        query = {} if after is None else {"_id": {"$gt": after}}
        return (
            collection.find(query)
            .sort("_id", pymongo.ASCENDING)
            .limit(limit)
            .batch_size(limit)
            .max_time_ms(max(1, round(self._reach.timeout * 1000)))
        )

    async def _run(self, call: Callable[[], T]) -> T:
        try:
            return await trio.to_thread.run_sync(
                call, abandon_on_cancel=self._reach.abandon_on_cancel
            )
        except SourceFailed as failed:
            raise SourceFailed(without_secrets(failed.reason, self._secrets)) from None
        except (pymongo.errors.PyMongoError, bson.errors.BSONError, OSError) as failed:
            raise SourceFailed(
                without_secrets(_reason(failed, self._reach.timeout), self._secrets)
            ) from None
        except Exception as failed:
            # the driver broke on an answer it did not expect (a server of the wire
            # protocol that lacks a part of it): a reason for the owner, the trace logged
            log.warning("mongodb data source: the driver failed", exc_info=True)
            reason = f"the server's answer could not be read ({type(failed).__name__}: {failed})"
            raise SourceFailed(without_secrets(reason, self._secrets)) from None


def _reason(failed: Exception, timeout: float) -> str:
    if isinstance(failed, pymongo.errors.OperationFailure):
        details = failed.details or {}
        return str(details.get("errmsg") or failed)
    reason = str(failed) or type(failed).__name__
    if isinstance(failed, pymongo.errors.ServerSelectionTimeoutError):
        # its reason ends with the whole topology: the first part says what happened
        with contextlib.suppress(ValueError):
            reason = reason[: reason.index(", Timeout:")]
        reason = f"{reason} (no server answered within {timeout:g} s)"
    return reason
