#!/usr/bin/env python3
"""Requests per second of POST /chat with instant fake providers, on one process and two.

    .venv/bin/python scripts/bench_load.py
    .venv/bin/python scripts/bench_load.py --duration 20 --clients 20 --many 100
    .venv/bin/python scripts/bench_load.py --only chat1 --clients 1 --repeat 3
    .venv/bin/python scripts/bench_load.py --only chat1 --src ../other-checkout/src
    .venv/bin/python scripts/bench_load.py --only chat1 --embeddings local
    .venv/bin/python scripts/bench_load.py --only chat1 --profile /tmp/chat.svg   # py-spy

What runs, each a process of its own on this machine:

- an embedded PostgreSQL (with pgvector), as the service's own start-up runs it;
- the fake OpenAI server of ``tests/io/fakes/openai_server.py`` (the real wire format:
  chat completions and base64 embeddings of EMBEDDING_DIMENSIONS, 3,072 by default),
  answering at once, on a lean HTTP/1.1 server (``serve_asgi``): on Hypercorn the fake
  spent ~1.4 ms of CPU a request, taken from the service measured; here ~0.3;
- one, then two ``ragchat serve`` processes on that database (``DATABASE_URL``), each on
  its own port: the service runs one Hypercorn worker a process and binds its port
  without SO_REUSEPORT (Hypercorn sets it only for ``workers > 1``), so two processes
  cannot share a port: the clients are split between the two ports, as a load balancer
  in front would split them;
- the load generator (``bench_load.py generate``), a process of its own: N clients, each
  one keep-alive HTTP/1.1 connection sending its next request as soon as the last is
  answered (a closed loop), over raw asyncio streams with the requests' bytes made once.
  A Python HTTP client (httpx) spends a few hundred microseconds of CPU a request, which
  on 2 shared cores would be taken from the service measured; this one spends ~0.1 ms
  (its line "generator alone", against a trivial server, shows how many a second it
  can make: several thousand).

A small knowledge base is ingested first (a shop's policies, ``DOCUMENTS``) through
POST /documents, so that /chat embeds, searches and retrieves real chunks, builds a
real prompt, cites and records each turn; the fake replies citing source [1]. Every
/chat response is checked: a 200 whose JSON has an answer and at least one citation;
anything else counts as an error. After the runs, the services' logs are searched for
ERROR lines (and tracebacks): any is reported.

Each line reports requests per second over ``--duration`` seconds (after a warm-up),
p50 and p99 latency, errors; ``others``, the cores busy with anything but these
processes meanwhile (the machine may be shared: then every figure moves with it, and
runs to compare are best alternated, ``--src``); and the CPU each process spent a
request (generator, service, fake providers, PostgreSQL: ``psutil``'s user+system time
over the window), the steadier figure. A service process is one Python thread holding
the GIL most of the time (``--profile`` samples that thread), so its CPU a request bounds
its requests a second whatever the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

API_KEY = "sk-bench-key"
REPLY = "According to the documents, here is the answer [1]."
WARM_UP_SECONDS = 3.0
REQUEST_TIMEOUT_SECONDS = 30.0

# ------------------------------------------------------------------ the knowledge base

DOCUMENTS = {
    "returns.md": """# Returns

Items can be returned within 30 days of delivery for a full refund. The item must be
unused and in its original packaging. Sale items can be returned within 14 days.

## Refunds

Refunds reach the original payment method within 5 business days of the return
arriving at our warehouse. Shipping costs are refunded only for faulty items.
""",
    "shipping.md": """# Shipping

We ship to every country of the European Union, the United Kingdom, Norway and
Switzerland. Standard shipping takes 3 to 5 working days and costs 4.90 euros; it is
free on orders over 50 euros. Express shipping arrives the next working day when
ordered before 2 pm and costs 12 euros.

## Tracking

Every parcel has a tracking number, sent by email when the parcel leaves the warehouse.
""",
    "warranty.md": """# Warranty

Every product has a two year warranty against manufacturing defects from the date of
delivery. Electronics from our own brand have a three year warranty. The warranty does
not cover wear and tear, accidents or repairs made by others.

## Claims

To make a warranty claim, send a photo of the defect and the order number to the
support team; a replacement or a repair is offered within 10 days.
""",
    "payment.md": """# Payment

We accept Visa, Mastercard, American Express, PayPal, Apple Pay and bank transfer.
Invoices can be paid within 30 days by business customers with an approved account.
Prices include VAT for deliveries inside the European Union.
""",
    "hours.md": """# Opening hours

The shop in Ghent opens at 9 am and closes at 6 pm, Monday to Saturday. It is closed
on Sundays and public holidays. The phone line is open from 8 am to 8 pm on weekdays.
""",
    "gift-cards.md": """# Gift cards

Gift cards are sold from 10 to 500 euros and are valid for two years from the date of
purchase. A gift card can be used online and in the shop, in several purchases, and
cannot be exchanged for cash.
""",
    "loyalty.md": """# Loyalty programme

Members of the loyalty programme earn one point for every euro spent. One hundred
points give a voucher of five euros. Points expire after eighteen months without a
purchase. Joining is free and members get early access to the seasonal sales.
""",
    "sizes.md": """# Sizes

Our clothing follows European sizes. The size guide on each product page lists the
chest, waist and hip measurements in centimetres. Shoes run small: order half a size
up. Exchanges for another size are free within 30 days.
""",
    "repairs.md": """# Repairs

Bicycles bought from us get a free first service within six months. Repairs outside
the warranty are quoted before any work starts; most are done within a week. Spare
parts are kept for at least five years after a model is discontinued.
""",
    "privacy.md": """# Privacy

We keep customer data only as long as the law requires: orders for seven years,
marketing consent until it is withdrawn. Customers can ask for a copy of their data or
for its deletion by writing to the privacy officer; we answer within one month.
""",
}

QUESTIONS = (
    "How many days do I have to return an item?",
    "Can I return a sale item?",
    "When will my refund arrive?",
    "Are shipping costs refunded when I return something?",
    "Which countries do you ship to?",
    "How long does standard shipping take?",
    "How much does express shipping cost?",
    "Is shipping free on large orders?",
    "How do I track my parcel?",
    "How long is the warranty on electronics?",
    "Does the warranty cover accidents?",
    "How do I make a warranty claim?",
    "Which payment methods do you accept?",
    "Can business customers pay by invoice?",
    "Do prices include VAT?",
    "When does the shop in Ghent open?",
    "Is the shop open on Sundays?",
    "When can I call the phone line?",
    "How long is a gift card valid?",
    "Can I exchange a gift card for cash?",
    "How many points do I earn in the loyalty programme?",
    "When do loyalty points expire?",
    "Do shoes run small or large?",
    "Are size exchanges free?",
    "Is the first bicycle service free?",
    "How long do you keep spare parts?",
    "How long do you keep my order data?",
    "How can I ask for my data to be deleted?",
)


# ------------------------------------------------------------------ the load generator


def http_request(method: str, path: str, body: Any = None, host: str = "127.0.0.1") -> bytes:
    """One HTTP/1.1 request's bytes, keep-alive, with a JSON body when given."""
    data = b"" if body is None else json.dumps(body).encode()
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}", "User-Agent: bench_load"]
    if body is not None:
        head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """Status, body and whether the server closes the connection after it."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, chunked, close = None, False, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            close = b"close" in value.lower()
    if chunked:
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            parts.append(chunk[:-2])
        body = b"".join(parts)
    elif length is not None:
        body = await reader.readexactly(length)
    else:
        body, close = await reader.read(), True
    return status, body, close


def check_response(kind: str, status: int, body: bytes) -> str | None:
    """What is wrong with a response, or None."""
    if status != 200:
        return f"HTTP {status}: {body[:200]!r}"
    if kind == "chat":
        try:
            answer = json.loads(body)
        except ValueError:
            return f"not JSON: {body[:200]!r}"
        if not answer.get("answer") or not answer.get("citations"):
            return f"no cited answer: {body[:300]!r}"
    return None


async def generate_load(spec: dict[str, Any]) -> dict[str, Any]:
    """Drive ``spec["clients"]`` closed-loop clients at ``spec["targets"]`` (split evenly),
    each sending the requests in turn; count what ends inside the measured window."""
    targets = [tuple(t) for t in spec["targets"]]
    requests = [r.encode("latin-1") for r in spec["requests"]]
    kind = spec["check"]
    loop = asyncio.get_running_loop()
    started = loop.time()
    window_start = started + spec["warmup"]
    window_end = window_start + spec["duration"]
    latencies: list[float] = []
    errors: list[str] = []
    error_count = 0
    turn = 0

    async def client(number: int) -> None:
        nonlocal turn, error_count
        host, port = targets[number % len(targets)]
        reader = writer = None
        while loop.time() < window_end:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
                writer.transport.set_write_buffer_limits(high=1 << 20)
            request = requests[turn % len(requests)]
            turn += 1
            sent = loop.time()
            try:
                writer.write(request)
                status, body, close = await asyncio.wait_for(
                    read_response(reader), REQUEST_TIMEOUT_SECONDS
                )
                problem = check_response(kind, status, body)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as error:
                problem, close = f"{type(error).__name__}: {error}", True
            done = loop.time()
            if window_start <= done <= window_end:
                if problem is None:
                    latencies.append(done - sent)
                else:
                    error_count += 1
                    if len(errors) < 5:
                        errors.append(problem)
            if close:
                writer.close()
                reader = writer = None
        if writer is not None:
            writer.close()

    await asyncio.gather(*(client(n) for n in range(spec["clients"])))
    total_seconds = loop.time() - started
    latencies.sort()

    def percentile(p: float) -> float | None:
        if not latencies:
            return None
        return 1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]

    return {
        "ok": len(latencies),
        "errors": error_count,
        "error_samples": errors,
        "rps": len(latencies) / spec["duration"],
        "p50_ms": percentile(50),
        "p99_ms": percentile(99),
        "sent": turn,
        "seconds": total_seconds,
    }


def generate_main(spec_json: str) -> None:
    spec = json.loads(spec_json)
    result = asyncio.run(generate_load(spec))
    print(json.dumps(result), flush=True)


# ------------------------------------------------------------------ servers for the benchmark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def serve_asgi(app: Any, port: int) -> None:
    """Serve the ASGI ``app`` on 127.0.0.1:``port`` over plain HTTP/1.1 keep-alive, with as
    little work a request as will do: a fake provider is to answer at once and spend next
    to nothing of the 2 cores (on Hypercorn, whose h11 parsing costs more than the fake,
    it spent ~1.4 ms of CPU a request). Bodies by Content-Length; answers whole, or
    chunked when the app streams (``more_body``)."""
    import trio

    async def connection(stream: trio.SocketStream) -> None:
        buffer = b""
        while True:
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buffer += data
            lines = buffer[:end].split(b"\r\n")
            method, target, _ = lines[0].split(b" ", 2)
            headers = []
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name, value = name.strip().lower(), value.strip()
                headers.append((name, value))
                if name == b"content-length":
                    length = int(value)
            while len(buffer) < end + 4 + length:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buffer += data
            body = buffer[end + 4 : end + 4 + length]
            buffer = buffer[end + 4 + length :]
            path, _, query = target.partition(b"?")
            scope = {
                "type": "http",
                "asgi": {"version": "3.0"},
                "http_version": "1.1",
                "method": method.decode(),
                "scheme": "http",
                "path": path.decode(),
                "raw_path": path,
                "query_string": query,
                "headers": headers,
                "client": None,
                "server": ("127.0.0.1", port),
            }
            exchange = Exchange(stream, body)
            await app(scope, exchange.receive, exchange.send)

    await trio.serve_tcp(connection, port, host="127.0.0.1")


class Exchange:
    """One request's ASGI ``receive`` (its whole body) and ``send`` (to the socket)."""

    def __init__(self, stream: Any, body: bytes):
        self.stream, self.body = stream, body
        self.head = b""
        self.chunked = False

    async def receive(self) -> dict[str, Any]:
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            head = [b"HTTP/1.1 %d OK" % message["status"]]
            head += [name + b": " + value for name, value in message["headers"]]
            self.head = b"\r\n".join(head)
            return
        piece, more = message.get("body", b""), message.get("more_body", False)
        if more or self.chunked:  # a stream: chunked, each piece sent as it comes
            out = b"%x\r\n%s\r\n" % (len(piece), piece) if piece else b""
            if not self.chunked:
                self.chunked = True
                out = self.head + b"\r\ntransfer-encoding: chunked\r\n\r\n" + out
            if not more:
                out += b"0\r\n\r\n"
            await self.stream.send_all(out)
            return
        head = self.head + b"\r\ncontent-length: %d\r\n\r\n" % len(piece)
        await self.stream.send_all(head + piece)


def fakes_main(port: int, dimensions: int) -> None:
    """The fake OpenAI server (``serve_asgi``), until SIGTERM."""
    import functools

    import trio
    from tests.io.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI(api_key=API_KEY, reply=REPLY)
    # the same vectors, each made once: the questions repeat, and the fake is not measured
    fake.embed = functools.lru_cache(maxsize=4096)(fake.embed)

    async def forget() -> None:
        while True:  # the fake records every request: keep its memory flat
            await trio.sleep(1)
            fake.requests.clear()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(forget)
            nursery.start_soon(serve_asgi, fake, port)
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

    trio.run(main)


def trivial_main(port: int) -> None:
    """An HTTP/1.1 server that answers every request with the same small JSON at once:
    what the generator is measured against, to show its own ceiling."""
    body = b'{"status": "ok"}'
    response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )

    class Answer(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport, self.buffer = transport, b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while True:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buffer[:end].lower()
                at = head.find(b"content-length:")
                length = int(head[at + 15 :].split(b"\r\n")[0]) if at >= 0 else 0
                if len(self.buffer) < end + 4 + length:
                    return
                self.buffer = self.buffer[end + 4 + length :]
                self.transport.write(response)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def wait_for_port(process: subprocess.Popen, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args} exited early ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port} after {timeout} s")


@contextmanager
def child(args: Sequence[str], port: int, log: Path, env: dict[str, str] | None = None) -> Any:
    """A process of ours listening on ``port``, its output in ``log``; SIGTERM on exit."""
    with open(log, "ab") as out:
        process = subprocess.Popen(
            args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env or os.environ.copy()
        )
    try:
        wait_for_port(process, port)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def this_script(*args: Any) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *map(str, args)]


def service_environ(
    port: int,
    database_url: str,
    fake_url: str,
    data_dir: Path,
    args: argparse.Namespace,
    src: str | None,
    workers: int,
) -> dict[str, str]:
    from tests.io.processes import clean_environ

    settings: dict[str, Any] = {
        "app_port": port,
        "app_workers": workers,
        "database_url": database_url,
        "data_dir": data_dir,
        "openai_api_key": API_KEY,
        "openai_base_url": fake_url,
        "embedding_dimensions": args.dimensions,
    }
    if args.embeddings == "local":
        settings["embedding_provider"] = "local"
        settings["data_dir"] = ROOT / "data"  # where the local model is kept (as the tests)
    env = clean_environ(**settings)
    if src:  # another checkout's code, imported before the installed one
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (src, env.get("PYTHONPATH"))))
    return env


# ------------------------------------------------------------------ measuring


class Cpu:
    """User+system CPU seconds of processes (and their children), read at two moments."""

    def __init__(self, pids: Sequence[int], children: bool = False):
        import psutil

        self.processes = [psutil.Process(pid) for pid in pids]
        self.children = children

    def seconds(self) -> float:
        import psutil

        total = 0.0
        for process in self.processes:
            family = [process, *(process.children(recursive=True) if self.children else [])]
            for member in family:
                with contextlib.suppress(psutil.Error):  # a backend that ended meanwhile
                    times = member.cpu_times()
                    total += times.user + times.system
        return total


def measure(
    label: str,
    targets: Sequence[tuple[str, int]],
    requests: Sequence[bytes],
    check: str,
    clients: int,
    cpus: dict[str, Cpu],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Run the generator once; its result, with each watched process's CPU ms a request."""
    spec = {
        "targets": targets,
        "requests": [r.decode("latin-1") for r in requests],
        "check": check,
        "clients": clients,
        "duration": args.duration,
        "warmup": WARM_UP_SECONDS,
    }
    generator = subprocess.Popen(
        this_script("generate", json.dumps(spec)), stdout=subprocess.PIPE, text=True
    )
    watched = {"gen": Cpu([generator.pid]), **cpus}
    time.sleep(WARM_UP_SECONDS)
    machine_before = busy_seconds()
    before = {name: cpu.seconds() for name, cpu in watched.items()}
    time.sleep(args.duration)
    after = {name: cpu.seconds() for name, cpu in watched.items()}
    machine = busy_seconds() - machine_before
    out, _ = generator.communicate(timeout=REQUEST_TIMEOUT_SECONDS + 60)
    if generator.returncode != 0:
        raise SystemExit(f"the load generator failed ({generator.returncode})")
    result = json.loads(out)
    answered = max(1, result["ok"] + result["errors"])
    spent = {name: after[name] - before[name] for name in watched}
    result["cpu_ms"] = {name: 1000 * seconds / answered for name, seconds in spent.items()}
    # the cores busy with anything else meanwhile (the machine is shared)
    result["others"] = max(0.0, machine - sum(spent.values())) / args.duration
    result["label"], result["clients"] = label, clients
    print(row(result), flush=True)
    for sample in result["error_samples"]:
        print(f"      error: {sample}", flush=True)
    return result


def row(result: dict[str, Any]) -> str:
    def ms(value: float | None) -> str:
        return "    -" if value is None else f"{value:7.1f}"

    cpu = "  ".join(f"{name} {value:5.2f}" for name, value in result["cpu_ms"].items())
    return (
        f"{result['label']:38s} {result['clients']:4d} {result['rps']:8.1f} "
        f"{ms(result['p50_ms'])} {ms(result['p99_ms'])} {result['errors']:6d} "
        f"{result['others']:7.2f}   {cpu}"
    )


HEADER = (
    f"{'':38s} {'cli':>4s} {'req/s':>8s} {'p50 ms':>7s} {'p99 ms':>7s} {'errors':>6s} "
    f"{'others':>7s}   CPU ms a request (user+system) of the generator and each process"
)


def busy_seconds() -> float:
    """CPU seconds the whole machine has been busy, all cores."""
    import psutil

    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def ingest(base_url: str) -> None:
    import httpx

    with httpx.Client(base_url=base_url, timeout=120) as client:
        for name, text in DOCUMENTS.items():
            response = client.post("/documents", json={"name": name, "text": text})
            if response.status_code not in (200, 201):
                raise SystemExit(f"POST /documents {name}: {response.status_code} {response.text}")
        answer = client.post("/chat", json={"question": QUESTIONS[0]})
        if check_response("chat", answer.status_code, answer.content) is not None:
            raise SystemExit(f"POST /chat does not answer with citations: {answer.text}")


def chat_requests() -> list[bytes]:
    return [http_request("POST", "/chat", {"question": q}) for q in QUESTIONS]


def errors_logged(logs: Sequence[Path]) -> list[str]:
    found = []
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if " ERROR " in line or line.startswith("Traceback") or " CRITICAL " in line:
                found.append(f"{log.name}: {line}")
    return found


@contextmanager
def profiled(pid: int, output: str | None) -> Iterator[None]:
    """py-spy recording ``pid`` meanwhile, when ``output`` names where its SVG goes."""
    if output is None:
        yield
        return
    installed = Path(sys.executable).with_name("py-spy")
    spy_format = "raw" if output.endswith(".txt") else "flamegraph"  # raw: collapsed stacks
    spy = subprocess.Popen(
        [
            str(installed) if installed.exists() else "py-spy",
            *("record", "--pid", str(pid), "--output", output, "--format", spy_format),
            *("--rate", "250", "--nonblocking", "--gil"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
        print(f"   py-spy profile of {pid}: {output}", flush=True)


def fake_requests(dimensions: int) -> list[bytes]:
    """What the service sends the fake for one /chat: the question's embedding (base64, as
    the SDK asks), then the answer; the API key in each."""
    auth = f"Authorization: Bearer {API_KEY}\r\n".encode()
    made = []
    for question in QUESTIONS:
        embedding = {
            "model": "text-embedding-3-large",
            "input": [question],
            "dimensions": dimensions,
            "encoding_format": "base64",
        }
        messages = [
            {"role": "system", "content": "Answer only from the numbered sources."},
            {"role": "user", "content": f"Sources: …\n\nQuestion: {question}"},
        ]
        chat = {"model": "gpt-4o-mini", "messages": messages, "max_tokens": 512}
        for path, body in (("/v1/embeddings", embedding), ("/v1/chat/completions", chat)):
            made.append(http_request("POST", path, body).replace(b"\r\n", b"\r\n" + auth, 1))
    return made


LINES = ("generator", "fakes", "health", "chat", "chat1", "many")


def run(args: argparse.Namespace) -> None:
    from tests.io.processes import postgres_processes_for

    from ragio.db.embedded import EmbeddedPostgres

    only = set(args.only or LINES)
    folder = Path(tempfile.mkdtemp(prefix="bench-load-"))
    print(f"bench_load: {os.cpu_count()} cores; logs and data under {folder}", flush=True)
    logs: list[Path] = []
    with ExitStack() as stack:

        def start(name: str, args: list[str], port: int, env: Any = None) -> Any:
            log = folder / f"{name}.log"
            logs.append(log)
            return stack.enter_context(child(args, port, log, env))

        fake_port = free_port()
        fake = start("fakes", this_script("fakes", fake_port, args.dimensions), fake_port)
        fakes = {"fakes": Cpu([fake.pid])}
        print(HEADER, flush=True)
        local = [("127.0.0.1", fake_port)]
        if "generator" in only:
            port = free_port()
            trivial = start("trivial", this_script("trivial", port), port)
            served = {"trivial": Cpu([trivial.pid])}
            for _ in range(args.repeat):
                label = "generator alone (trivial server)"
                target = [("127.0.0.1", port)]
                measure(label, target, chat_requests(), "status", args.clients, served, args)
        if "fakes" in only:
            for _ in range(args.repeat):
                label = "fakes alone (embedding + chat)"
                requests = fake_requests(args.dimensions)
                measure(label, local, requests, "status", args.clients, fakes, args)
        if not only & {"health", "chat", "chat1", "many"}:
            return
        # each code (this checkout's, and --src's) on a database of its own, with its
        # `ragchat serve` as a user starts it, and one of a single process (chat1)
        fake_url = f"http://127.0.0.1:{fake_port}/v1"
        serve = [sys.executable, "-m", "voiceio.cli", "serve"]
        codes = [("", None)] + ([(" [--src]", args.src)] if args.src else [])
        prepared = []
        for number, (tag, src) in enumerate(codes, start=1):
            server = EmbeddedPostgres(folder / f"db{number}")
            database_url = server.start()
            stack.callback(server.stop)
            [postmaster] = postgres_processes_for(server.pgdata)
            pg = Cpu([postmaster], children=True)
            services: dict[str, Any] = {}
            kinds = [("serve", args.workers)] if only & {"health", "chat", "many"} else []
            kinds += [("one", 1)] if "chat1" in only else []
            for kind, workers in kinds:
                port = free_port()
                data = folder / f"data{number}-{kind}"
                env = service_environ(port, database_url, fake_url, data, args, src, workers)
                process = start(f"service{number}-{kind}", serve, port, env)
                if not services:  # the second starts on the migrated, filled database
                    ingest(f"http://127.0.0.1:{port}")
                else:
                    wait_until_answering(f"http://127.0.0.1:{port}")
                services[kind] = (process, [("127.0.0.1", port)])
            prepared.append((tag, services, pg))
        lines = (
            ("health", "serve", args.clients, "GET /health, serve"),
            ("chat", "serve", args.clients, "POST /chat, serve"),
            ("chat1", "one", args.clients, "POST /chat, one process"),
            ("many", "serve", args.many, f"POST /chat, serve, {args.many} clients"),
        )
        for _ in range(args.repeat):  # alternated: the machine's noise falls on each alike
            for what, kind, clients, label in lines:
                if what not in only:
                    continue
                for tag, services, pg in prepared:
                    process, target = services[kind]
                    # the service: `serve` and every process it started
                    watched = {"service": Cpu([process.pid], children=True)}
                    if what == "health":
                        health = [http_request("GET", "/health")]
                        measure(label + tag, target, health, "status", clients, watched, args)
                        continue
                    watched |= {**fakes, "postgres": pg}
                    profile = args.profile if what == "chat1" and not tag else None
                    with profiled(process.pid, profile):
                        measure(
                            label + tag, target, chat_requests(), "chat", clients, watched, args
                        )
    logged = errors_logged([log for log in logs if log.name.startswith("service")])
    print(f"errors logged by the services: {len(logged)}", flush=True)
    for entry in logged[:10]:
        print(f"   {entry}", flush=True)


def wait_until_answering(base_url: str) -> None:
    import httpx

    answer = httpx.post(f"{base_url}/chat", json={"question": QUESTIONS[0]}, timeout=120)
    if check_response("chat", answer.status_code, answer.content) is not None:
        raise SystemExit(f"POST /chat does not answer with citations: {answer.text}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "generate":
        generate_main(sys.argv[2])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "fakes":
        fakes_main(int(sys.argv[2]), int(sys.argv[3]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "trivial":
        trivial_main(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="seconds measured a line")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients")
    parser.add_argument("--many", type=int, default=100, help="clients of the last line")
    parser.add_argument(
        "--dimensions",
        type=int,
        default=3072,
        help="EMBEDDING_DIMENSIONS of the fake embeddings (default: the service's, %(default)s)",
    )
    parser.add_argument(
        "--embeddings",
        choices=("fake", "local"),
        default="fake",
        help="the fake OpenAI server's embeddings, or the local MiniLM in the service",
    )
    parser.add_argument("--only", nargs="+", choices=LINES, help="run only these lines")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run each line this many times, alternated"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="APP_WORKERS of the `serve` lines (default 0: one API process per core)",
    )
    parser.add_argument(
        "--src",
        help="also run the service lines on this src folder (another checkout's: the code "
        "before a change), beside this checkout's, in the same invocation",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="record the one-process /chat line with py-spy (pip install py-spy): samples of "
        "the thread holding the GIL, as a flame graph (.svg) or collapsed stacks (.txt)",
    )
    run(parser.parse_args())


if __name__ == "__main__":
    main()
