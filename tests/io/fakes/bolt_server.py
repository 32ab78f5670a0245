"""A fake Neo4j server on 127.0.0.1 speaking the real Bolt protocol to the official driver.

No Neo4j server installs here, so this keeps everything on the wire real and fakes only
the database: the driver under test connects over TCP, negotiates the protocol version
(the handshake: magic ``0x6060B017`` and four proposals, ranges included; it answers
Bolt 5.4), frames messages in chunks, packs values with PackStream (null, booleans,
integers of every size, floats, strings, bytes, lists, dictionaries, structures), and
talks the 5.4 message set: HELLO and LOGON/LOGOFF (a wrong user or password answers
``Neo.ClientError.Security.Unauthorized`` as Neo4j does), TELEMETRY (the HELLO answer
hints it is enabled), ROUTE (a routing table naming this server as writer, reader and
router, for ``neo4j://``), BEGIN, RUN, PULL (``n`` records at a time, ``has_more``),
DISCARD, COMMIT, ROLLBACK, RESET and GOODBYE, with FAILURE and then IGNORED until RESET.

It cannot run Cypher. Every query of ``ragio.graph.neo4j`` begins with a
``// ragchat:<name>`` comment; the fake runs the Python function of that name over an
in-memory graph with the parameters the driver sent, inside real transactions (a
transaction works on a copy, committed or dropped whole). So this leaves unverified:
that the Cypher itself is valid and means what its Python twin here does (syntax,
semantics, the schema DDL), how Neo4j plans and performs the queries, the server's own
transaction timeout, TLS (``+s``/``+ssc``), and routing beyond a one-member cluster.

Faults, for the store's degrade paths: ``fail_next`` (a FAILURE for the next RUNs),
``hang_next`` (the next RUNs answer only after a delay), ``drop_next`` (the next RUNs
close the connection instead of answering), ``drop_connections`` (close every open
connection now), ``stop``/``start`` (the port refuses, then serves again). ``runs``
records every RUN (tag, parameters, extra), ``messages`` every message's name.
"""

from __future__ import annotations

import contextlib
import copy
import io
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"\x60\x60\xb0\x17"
VERSION = (5, 4)
SERVER_AGENT = "Neo4j/5.26.0"
UNAUTHORIZED = "Neo.ClientError.Security.Unauthorized"

# message signatures (Bolt 5)
HELLO, GOODBYE, RESET, RUN, BEGIN, COMMIT, ROLLBACK = 0x01, 0x02, 0x0F, 0x10, 0x11, 0x12, 0x13
DISCARD, PULL, TELEMETRY, ROUTE, LOGON, LOGOFF = 0x2F, 0x3F, 0x54, 0x66, 0x6A, 0x6B
SUCCESS, RECORD, IGNORED, FAILURE = 0x70, 0x71, 0x7E, 0x7F
NAMES = {
    HELLO: "HELLO", GOODBYE: "GOODBYE", RESET: "RESET", RUN: "RUN", BEGIN: "BEGIN",
    COMMIT: "COMMIT", ROLLBACK: "ROLLBACK", DISCARD: "DISCARD", PULL: "PULL",
    TELEMETRY: "TELEMETRY", ROUTE: "ROUTE", LOGON: "LOGON", LOGOFF: "LOGOFF",
}  # fmt: skip


# --- PackStream ------------------------------------------------------------------------------


@dataclass
class Structure:
    tag: int
    fields: list[Any]


def pack(value: Any) -> bytes:
    out = io.BytesIO()
    _pack(out, value)
    return out.getvalue()


def _pack(out: io.BytesIO, value: Any) -> None:
    if value is None:
        out.write(b"\xc0")
    elif value is True:
        out.write(b"\xc3")
    elif value is False:
        out.write(b"\xc2")
    elif isinstance(value, int):
        if -16 <= value < 128:
            out.write(struct.pack(">b", value))
        elif -128 <= value < 128:
            out.write(b"\xc8" + struct.pack(">b", value))
        elif -(2**15) <= value < 2**15:
            out.write(b"\xc9" + struct.pack(">h", value))
        elif -(2**31) <= value < 2**31:
            out.write(b"\xca" + struct.pack(">i", value))
        else:
            out.write(b"\xcb" + struct.pack(">q", value))
    elif isinstance(value, float):
        out.write(b"\xc1" + struct.pack(">d", value))
    elif isinstance(value, str):
        data = value.encode("utf-8")
        _size(out, len(data), 0x80, b"\xd0", b"\xd1", b"\xd2")
        out.write(data)
    elif isinstance(value, bytes | bytearray):
        n = len(value)
        out.write(
            b"\xcc" + struct.pack(">B", n)
            if n < 2**8
            else b"\xcd" + struct.pack(">H", n)
            if n < 2**16
            else b"\xce" + struct.pack(">I", n)
        )
        out.write(bytes(value))
    elif isinstance(value, list | tuple):
        _size(out, len(value), 0x90, b"\xd4", b"\xd5", b"\xd6")
        for item in value:
            _pack(out, item)
    elif isinstance(value, dict):
        _size(out, len(value), 0xA0, b"\xd8", b"\xd9", b"\xda")
        for key, item in value.items():
            _pack(out, str(key))
            _pack(out, item)
    elif isinstance(value, Structure):
        out.write(bytes((0xB0 | len(value.fields), value.tag)))
        for item in value.fields:
            _pack(out, item)
    else:
        raise TypeError(f"cannot pack {type(value).__name__}")


def _size(out: io.BytesIO, n: int, tiny: int, m8: bytes, m16: bytes, m32: bytes) -> None:
    if n < 16:
        out.write(bytes((tiny | n,)))
    elif n < 2**8:
        out.write(m8 + struct.pack(">B", n))
    elif n < 2**16:
        out.write(m16 + struct.pack(">H", n))
    else:
        out.write(m32 + struct.pack(">I", n))


def unpack(data: bytes) -> Any:
    reader = io.BytesIO(data)
    value = _unpack(reader)
    if reader.read(1):
        raise ValueError("trailing bytes after a PackStream value")
    return value


def _read(reader: io.BytesIO, n: int) -> bytes:
    data = reader.read(n)
    if len(data) != n:
        raise ValueError("truncated PackStream value")
    return data


def _unpack(reader: io.BytesIO) -> Any:
    marker = _read(reader, 1)[0]
    if marker < 0x80:
        return marker
    if marker >= 0xF0:
        return marker - 0x100
    high = marker & 0xF0
    if high == 0x80:
        return _read(reader, marker & 0x0F).decode("utf-8")
    if high == 0x90:
        return [_unpack(reader) for _ in range(marker & 0x0F)]
    if high == 0xA0:
        return _dict(reader, marker & 0x0F)
    if high == 0xB0:
        tag = _read(reader, 1)[0]
        return Structure(tag, [_unpack(reader) for _ in range(marker & 0x0F)])
    simple: dict[int, Callable[[], Any]] = {
        0xC0: lambda: None,
        0xC1: lambda: struct.unpack(">d", _read(reader, 8))[0],
        0xC2: lambda: False,
        0xC3: lambda: True,
        0xC8: lambda: struct.unpack(">b", _read(reader, 1))[0],
        0xC9: lambda: struct.unpack(">h", _read(reader, 2))[0],
        0xCA: lambda: struct.unpack(">i", _read(reader, 4))[0],
        0xCB: lambda: struct.unpack(">q", _read(reader, 8))[0],
    }
    if marker in simple:
        return simple[marker]()
    sizes = {0: ">B", 1: ">H", 2: ">I"}
    if 0xCC <= marker <= 0xCE:  # bytes
        form = sizes[marker - 0xCC]
        return _read(reader, struct.unpack(form, _read(reader, struct.calcsize(form)))[0])
    if 0xD0 <= marker <= 0xD2:  # string
        form = sizes[marker - 0xD0]
        n = struct.unpack(form, _read(reader, struct.calcsize(form)))[0]
        return _read(reader, n).decode("utf-8")
    if 0xD4 <= marker <= 0xD6:  # list
        form = sizes[marker - 0xD4]
        n = struct.unpack(form, _read(reader, struct.calcsize(form)))[0]
        return [_unpack(reader) for _ in range(n)]
    if 0xD8 <= marker <= 0xDA:  # dictionary
        form = sizes[marker - 0xD8]
        return _dict(reader, struct.unpack(form, _read(reader, struct.calcsize(form)))[0])
    raise ValueError(f"unknown PackStream marker 0x{marker:02X}")


def _dict(reader: io.BytesIO, n: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for _ in range(n):
        key = _unpack(reader)
        if not isinstance(key, str):
            raise ValueError("a PackStream dictionary key must be a string")
        result[key] = _unpack(reader)
    return result


# --- the graph and the queries it runs ----------------------------------------------------------


@dataclass
class Graph:
    """What the fake database holds: the model of ``ragio.graph.neo4j``."""

    entities: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> id, name, kind
    chunks: dict[int, int] = field(default_factory=dict)  # chunk id -> document id
    mentions: set[tuple[int, str]] = field(default_factory=set)  # (chunk id, entity key)
    # (source key, target key, kind, chunk id) -> document id
    relations: dict[tuple[str, str, str, int], int] = field(default_factory=dict)
    schema: set[str] = field(default_factory=set)  # names of constraints and indexes

    def delete_entity(self, key: str) -> None:
        self.entities.pop(key, None)
        self.mentions = {m for m in self.mentions if m[1] != key}
        self.relations = {r: d for r, d in self.relations.items() if key not in r[:2]}

    def delete_chunk(self, chunk_id: int) -> None:
        self.chunks.pop(chunk_id, None)
        self.mentions = {m for m in self.mentions if m[0] != chunk_id}

    def mentioning(self, key: str) -> list[int]:
        return sorted(c for c, k in self.mentions if k == key)

    def summary(self, key: str) -> dict[str, Any]:
        chunks = self.mentioning(key)
        return {
            **self.entities[key],
            "key": key,
            "mentions": len(chunks),
            "documents": len({self.chunks[c] for c in chunks}),
        }

    def neighbours(self, key: str) -> dict[str, tuple[set[int], set[str]]]:
        """Related entity -> (chunk ids, kinds), either direction."""
        found: dict[str, tuple[set[int], set[str]]] = {}
        for source, target, kind, chunk_id in self.relations:
            if key in (source, target) and source != target:
                other = target if source == key else source
                chunk_ids, kinds = found.setdefault(other, (set(), set()))
                chunk_ids.add(chunk_id)
                kinds.add(kind)
        return found

    def by_id(self, entity_id: str) -> str | None:
        return next((k for k, e in self.entities.items() if e["id"] == entity_id), None)


# a query's result: its field names and its records
Result = tuple[list[str], list[list[Any]]]
NOTHING: Result = ([], [])


def _schema(name: str) -> Callable[[Graph, dict[str, Any]], Result]:
    def create(graph: Graph, _: dict[str, Any]) -> Result:
        graph.schema.add(name)
        return NOTHING

    return create


def _forget_relations(graph: Graph, p: dict[str, Any]) -> Result:
    ids = set(p["document_ids"])
    graph.relations = {r: d for r, d in graph.relations.items() if d not in ids}
    return NOTHING


def _forget_chunks(graph: Graph, p: dict[str, Any]) -> Result:
    ids = set(p["document_ids"])
    doomed = {c for c, d in graph.chunks.items() if d in ids}
    keys = sorted({k for c, k in graph.mentions if c in doomed})
    for chunk_id in doomed:
        graph.delete_chunk(chunk_id)
    return ["keys"], [[keys]]


def _forget_orphans(graph: Graph, p: dict[str, Any]) -> Result:
    mentioned = {k for _, k in graph.mentions}
    for key in p["keys"]:
        if key in graph.entities and key not in mentioned:
            graph.delete_entity(key)
    return NOTHING


def _record_entities(graph: Graph, p: dict[str, Any]) -> Result:
    for row in p["rows"]:
        graph.entities.setdefault(
            row["key"], {"id": row["id"], "name": row["name"], "kind": row["kind"]}
        )
    return NOTHING


def _record_chunks(graph: Graph, p: dict[str, Any]) -> Result:
    for row in p["rows"]:
        graph.chunks[row["id"]] = row["document_id"]
    return NOTHING


def _record_mentions(graph: Graph, p: dict[str, Any]) -> Result:
    for row in p["rows"]:
        if row["chunk_id"] in graph.chunks and row["key"] in graph.entities:
            graph.mentions.add((row["chunk_id"], row["key"]))
    return NOTHING


def _record_relations(graph: Graph, p: dict[str, Any]) -> Result:
    for row in p["rows"]:
        if row["source"] in graph.entities and row["target"] in graph.entities:
            key = (row["source"], row["target"], row["kind"], row["chunk_id"])
            graph.relations[key] = row["document_id"]
    return NOTHING


def _reach_entities(graph: Graph, p: dict[str, Any]) -> Result:
    records = []
    for key in p["keys"]:
        if key in graph.entities:
            chunks = graph.mentioning(key)
            # Cypher promises no order for a pattern comprehension: neither does this
            listed = list(reversed(chunks)) if len(chunks) <= p["max_mentions"] else []
            records.append([key, len(chunks), listed])
    return ["key", "mentions", "chunk_ids"], records


def _reach_neighbours(graph: Graph, p: dict[str, Any]) -> Result:
    records = []
    for key in sorted(set(p["keys"])):
        if key not in graph.entities:
            continue
        found = [(n, len(c)) for n, (c, _) in graph.neighbours(key).items()]
        found.sort(key=lambda item: (-item[1], item[0]))
        if found:
            top = [{"key": n, "weight": w} for n, w in found[: max(p["max_neighbours"], 0)]]
            records.append([key, top])
    return ["key", "neighbours"], records


def _matching(graph: Graph, needle: str) -> list[str]:
    return [
        k
        for k, e in graph.entities.items()
        if not needle or needle in e["name"].lower() or needle in k.lower()
    ]


SUMMARY = ["id", "key", "name", "kind", "mentions", "documents"]


def _count_entities(graph: Graph, p: dict[str, Any]) -> Result:
    return ["total"], [[len(_matching(graph, p["needle"]))]]


def _find_entities(graph: Graph, p: dict[str, Any]) -> Result:
    found = [graph.summary(k) for k in _matching(graph, p["needle"])]
    found.sort(key=lambda s: (-s["mentions"], s["key"]))
    page = found[p["offset"] : p["offset"] + p["limit"]]
    return SUMMARY, [[s[f] for f in SUMMARY] for s in page]


def _entity(graph: Graph, p: dict[str, Any]) -> Result:
    key = graph.by_id(p["id"])
    if key is None:
        return SUMMARY, []
    summary = graph.summary(key)
    return SUMMARY, [[summary[f] for f in SUMMARY]]


def _entity_mentions(graph: Graph, p: dict[str, Any]) -> Result:
    key = graph.by_id(p["id"])
    chunks = graph.mentioning(key)[: p["limit"]] if key else []
    return ["chunk_id", "document_id"], [[c, graph.chunks[c]] for c in chunks]


def _entity_neighbours(graph: Graph, p: dict[str, Any]) -> Result:
    key = graph.by_id(p["id"])
    if key is None:
        return [*SUMMARY, "weight", "kinds"], []
    rows = []
    for other, (chunk_ids, kinds) in graph.neighbours(key).items():
        summary = graph.summary(other)
        rows.append([*(summary[f] for f in SUMMARY), len(chunk_ids), list(kinds)])
    rows.sort(key=lambda r: (-r[-2], r[1]))
    return [*SUMMARY, "weight", "kinds"], rows


def _counts(graph: Graph, _: dict[str, Any]) -> Result:
    return ["entities", "mentions", "relations"], [
        [len(graph.entities), len(graph.mentions), len(graph.relations)]
    ]


def _clear(graph: Graph, p: dict[str, Any]) -> Result:
    doomed = [("chunk", c) for c in graph.chunks] + [("entity", k) for k in graph.entities]
    doomed = doomed[: p["batch"]]
    for kind, name in doomed:
        if kind == "chunk":
            graph.delete_chunk(name)  # type: ignore[arg-type]
        else:
            graph.delete_entity(name)  # type: ignore[arg-type]
    return ["deleted"], [[len(doomed)]]


QUERIES: dict[str, Callable[[Graph, dict[str, Any]], Result]] = {
    "constraint_entity_key": _schema("ragchat_entity_key"),
    "constraint_chunk_id": _schema("ragchat_chunk_id"),
    "index_entity_id": _schema("ragchat_entity_id"),
    "index_chunk_document": _schema("ragchat_chunk_document"),
    "index_related_document": _schema("ragchat_related_document"),
    "forget_relations": _forget_relations,
    "forget_chunks": _forget_chunks,
    "forget_orphans": _forget_orphans,
    "record_entities": _record_entities,
    "record_chunks": _record_chunks,
    "record_mentions": _record_mentions,
    "record_relations": _record_relations,
    "reach_entities": _reach_entities,
    "reach_neighbours": _reach_neighbours,
    "count_entities": _count_entities,
    "find_entities": _find_entities,
    "entity": _entity,
    "entity_mentions": _entity_mentions,
    "entity_neighbours": _entity_neighbours,
    "counts": _counts,
    "clear": _clear,
}


def tag_of(query: str) -> str | None:
    first = query.lstrip().split("\n", 1)[0].strip()
    prefix = "// ragchat:"
    return first[len(prefix) :].strip() if first.startswith(prefix) else None


# --- the server -----------------------------------------------------------------------------


@dataclass
class Run:
    """A RUN the server received: the query's tag, its parameters, its extra (``tx_timeout``,
    ``mode``, ``db``), and whether it ran in an explicit transaction."""

    tag: str | None
    query: str
    params: dict[str, Any]
    extra: dict[str, Any]
    in_transaction: bool


@dataclass
class Fault:
    kind: str  # "fail", "hang" or "drop"
    times: int
    code: str = ""
    message: str = ""
    seconds: float = 0.0


class Closed(Exception):
    """The connection is over (GOODBYE, a drop, the peer gone, the server stopped)."""


class FakeNeo4j:
    def __init__(self, user: str = "neo4j", password: str = "secret-pw") -> None:  # noqa: S107 - a test server
        self.user = user
        self.password = password
        self.graph = Graph()
        self.runs: list[Run] = []
        self.messages: list[str] = []
        self.begins: list[dict[str, Any]] = []
        self.port = 0
        self._lock = threading.Lock()  # the graph, the records and the faults
        self._fault: Fault | None = None
        self._connections: set[socket.socket] = set()
        self._stopped = threading.Event()
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # --- control ---

    def uri(self, scheme: str = "bolt") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self) -> FakeNeo4j:
        fake = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                fake._serve(self.request)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        server = socketserver.ThreadingTCPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._stopped.clear()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and close every connection: the port refuses until ``start``."""
        self._stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.drop_connections()

    # one fault pending at a time: setting one replaces what is left of the last

    def fail_next(self, code: str, message: str = "failed", times: int = 1) -> None:
        """The next ``times`` RUNs answer FAILURE ``code``."""
        self._set_fault(Fault("fail", times, code=code, message=message))

    def hang_next(self, seconds: float, times: int = 1) -> None:
        """The next ``times`` RUNs answer only after ``seconds``."""
        self._set_fault(Fault("hang", times, seconds=seconds))

    def drop_next(self, times: int = 1) -> None:
        """The next ``times`` RUNs close their connection instead of answering."""
        self._set_fault(Fault("drop", times))

    def clear_faults(self) -> None:
        self._set_fault(None)

    def _set_fault(self, fault: Fault | None) -> None:
        with self._lock:
            self._fault = fault

    def drop_connections(self) -> None:
        """Close every open connection now, as a crashed server or a network cut would."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shut(connection)

    def tags(self) -> list[str | None]:
        with self._lock:
            return [run.tag for run in self.runs]

    def clear_records(self) -> None:
        with self._lock:
            self.runs.clear()
            self.messages.clear()
            self.begins.clear()

    # --- one connection ---

    def _serve(self, connection: socket.socket) -> None:
        # each answer is its own small write: without this, Nagle's algorithm and the
        # driver's delayed acknowledgements make every round trip about 40 ms
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._connections.add(connection)
        try:
            _Session(self, connection).serve()
        except (Closed, OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._connections.discard(connection)
            _shut(connection)

    def _take_fault(self) -> Fault | None:
        with self._lock:
            fault = self._fault
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._fault = None
            return fault

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already shut
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()


class _Session:
    """One Bolt connection's state machine (Bolt 5.4's server states, simplified:
    CONNECTED, AUTHENTICATION, READY, STREAMING, TX_READY/TX_STREAMING, FAILED)."""

    def __init__(self, fake: FakeNeo4j, connection: socket.socket) -> None:
        self.fake = fake
        self.connection = connection
        self.state = "CONNECTED"
        self.failed = False
        self.tx: Graph | None = None  # the explicit transaction's copy of the graph
        self.auto: Graph | None = None  # an auto-commit query's copy, until its stream ends
        self.stream: list[list[Any]] = []
        self.streaming = False
        self.qid = -1

    # --- wire ---

    def recv_exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            piece = self.connection.recv(n - len(data))
            if not piece:
                raise Closed
            data += piece
        return bytes(data)

    def read_message(self) -> Structure:
        while True:
            data = bytearray()
            while True:
                (size,) = struct.unpack(">H", self.recv_exactly(2))
                if size == 0:
                    break
                data += self.recv_exactly(size)
            if data:  # an empty message is a NOOP (keep-alive)
                message = unpack(bytes(data))
                if not isinstance(message, Structure):
                    raise ValueError("a Bolt message must be a structure")
                return message

    def send(self, tag: int, *fields: Any) -> None:
        data = pack(Structure(tag, list(fields)))
        out = bytearray()
        for start in range(0, len(data), 0xFFFF):
            piece = data[start : start + 0xFFFF]
            out += struct.pack(">H", len(piece)) + piece
        out += b"\x00\x00"
        self.connection.sendall(out)

    def handshake(self) -> None:
        if self.recv_exactly(4) != MAGIC:
            raise Closed
        proposals = self.recv_exactly(16)
        for i in range(0, 16, 4):
            _, span, minor, major = proposals[i : i + 4]
            if major == VERSION[0] and minor - span <= VERSION[1] <= minor:
                self.connection.sendall(bytes((0, 0, VERSION[1], VERSION[0])))
                return
        self.connection.sendall(b"\x00\x00\x00\x00")  # none agreed: Neo4j closes
        raise Closed

    # --- messages ---

    def serve(self) -> None:
        self.handshake()
        while not self.fake._stopped.is_set():
            message = self.read_message()
            name = NAMES.get(message.tag, f"0x{message.tag:02X}")
            with self.fake._lock:
                self.fake.messages.append(name)
            if message.tag == GOODBYE:
                raise Closed
            if message.tag == RESET:
                self.failed, self.tx, self.auto, self.stream = False, None, None, []
                self.streaming = False
                if self.state not in ("CONNECTED", "AUTHENTICATION"):
                    self.state = "READY"
                self.send(SUCCESS, {})
                continue
            if self.failed:
                self.send(IGNORED)
                continue
            handler = getattr(self, f"on_{name.lower()}", None)
            if handler is None:
                self.failure("Neo.ClientError.Request.Invalid", f"unknown message {name}")
                continue
            handler(*message.fields)

    def failure(self, code: str, message: str) -> None:
        self.failed = True
        self.tx = self.auto = None
        self.stream, self.streaming = [], False
        self.send(FAILURE, {"code": code, "message": message})

    def on_hello(self, extra: dict[str, Any]) -> None:
        if self.state != "CONNECTED" or "user_agent" not in extra or "credentials" in extra:
            self.failure("Neo.ClientError.Request.Invalid", "HELLO out of place")
            return
        self.state = "AUTHENTICATION"
        self.send(
            SUCCESS,
            {
                "server": SERVER_AGENT,
                "connection_id": f"bolt-{self.fake._next_id()}",
                "hints": {"telemetry.enabled": True},
            },
        )

    def on_logon(self, auth: dict[str, Any]) -> None:
        if self.state != "AUTHENTICATION":
            self.failure("Neo.ClientError.Request.Invalid", "LOGON out of place")
            return
        if (
            auth.get("scheme") != "basic"
            or auth.get("principal") != self.fake.user
            or auth.get("credentials") != self.fake.password
        ):
            # what Neo4j answers, and then it closes the connection
            self.send(
                FAILURE,
                {
                    "code": UNAUTHORIZED,
                    "message": "The client is unauthorized due to authentication failure.",
                },
            )
            raise Closed
        self.state = "READY"
        self.send(SUCCESS, {})

    def on_logoff(self) -> None:
        self.state = "AUTHENTICATION"
        self.send(SUCCESS, {})

    def on_telemetry(self, api: int) -> None:
        self.send(SUCCESS, {})

    def on_route(self, context: dict[str, Any], bookmarks: list[str], db: dict[str, Any]) -> None:
        if self.state != "READY":
            self.failure("Neo.ClientError.Request.Invalid", "ROUTE out of place")
            return
        here = [f"127.0.0.1:{self.fake.port}"]
        table = {
            "ttl": 300,
            "db": db.get("db") or "neo4j",
            "servers": [
                {"addresses": here, "role": "WRITE"},
                {"addresses": here, "role": "READ"},
                {"addresses": here, "role": "ROUTE"},
            ],
        }
        self.send(SUCCESS, {"rt": table})

    def on_begin(self, extra: dict[str, Any]) -> None:
        if self.state != "READY":
            self.failure("Neo.ClientError.Request.Invalid", "BEGIN out of place")
            return
        with self.fake._lock:
            self.fake.begins.append(extra)
            self.tx = copy.deepcopy(self.fake.graph)
        self.state = "TX"
        self.qid = -1
        self.send(SUCCESS, {})

    def on_run(self, query: str, params: dict[str, Any], extra: dict[str, Any]) -> None:
        if self.state not in ("READY", "TX") or self.streaming:
            self.failure("Neo.ClientError.Request.Invalid", "RUN out of place")
            return
        tag = tag_of(query)
        with self.fake._lock:
            self.fake.runs.append(Run(tag, query, params, extra, self.state == "TX"))
        fault = self.fake._take_fault()
        if fault is not None and fault.kind == "drop":
            raise Closed
        if fault is not None and fault.kind == "hang" and self.fake._stopped.wait(fault.seconds):
            raise Closed
        if fault is not None and fault.kind == "fail":
            self.failure(fault.code, fault.message)
            return
        run = QUERIES.get(tag or "")
        if run is None:
            self.failure("Neo.ClientError.Statement.SyntaxError", "the fake knows no such query")
            return
        if self.state == "READY":
            with self.fake._lock:
                self.auto = copy.deepcopy(self.fake.graph)
        graph = self.tx if self.state == "TX" else self.auto
        assert graph is not None
        try:
            fields, records = run(graph, params)
        except (KeyError, TypeError) as error:
            self.failure("Neo.ClientError.Statement.ParameterMissing", repr(error))
            return
        self.stream, self.streaming = list(records), True
        metadata: dict[str, Any] = {"fields": fields, "t_first": 0}
        if self.state == "TX":
            self.qid += 1
            metadata["qid"] = self.qid
        self.send(SUCCESS, metadata)

    def on_pull(self, extra: dict[str, Any]) -> None:
        if not self.streaming:
            self.failure("Neo.ClientError.Request.Invalid", "PULL with nothing to pull")
            return
        n = extra.get("n", -1)
        count = len(self.stream) if n == -1 else min(n, len(self.stream))
        for record in self.stream[:count]:
            self.send(RECORD, record)
        self.stream = self.stream[count:]
        if self.stream:
            self.send(SUCCESS, {"has_more": True})
            return
        self.end_stream()

    def on_discard(self, extra: dict[str, Any]) -> None:
        if not self.streaming:
            self.failure("Neo.ClientError.Request.Invalid", "DISCARD with nothing to discard")
            return
        self.stream = []
        self.end_stream()

    def end_stream(self) -> None:
        self.streaming = False
        summary: dict[str, Any] = {"t_last": 0, "type": "rw", "db": "neo4j"}
        if self.state == "READY":  # an auto-commit query commits when its stream ends
            with self.fake._lock:
                assert self.auto is not None
                self.fake.graph, self.auto = self.auto, None
            summary["bookmark"] = f"FB:fake:{self.fake._next_id()}"
        self.send(SUCCESS, summary)

    def on_commit(self) -> None:
        if self.state != "TX" or self.streaming:
            self.failure("Neo.ClientError.Request.Invalid", "COMMIT out of place")
            return
        with self.fake._lock:
            assert self.tx is not None
            self.fake.graph, self.tx = self.tx, None
        self.state = "READY"
        self.send(SUCCESS, {"bookmark": f"FB:fake:{self.fake._next_id()}"})

    def on_rollback(self) -> None:
        if self.state != "TX":
            self.failure("Neo.ClientError.Request.Invalid", "ROLLBACK out of place")
            return
        self.tx, self.stream, self.streaming = None, [], False
        self.state = "READY"
        self.send(SUCCESS, {})
