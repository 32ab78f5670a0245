"""The reverse-proxy configurations of docs/operations.md ("Going live") work: each
``caddyfile`` and ``nginx`` block is read from the doc, run by the real Caddy or nginx in
front of the real service and voice server, and through it a Twilio-signed media stream
reaches the voice server and hears the greeting, /chat/stream's events arrive as they are
written (not buffered until the answer ends), and a signed POST /webhook/voice is answered
with the <Stream> at VOICE_PUBLIC_URL.

The doc's blocks are changed only mechanically, and each change must apply (a doc that no
longer has what is replaced fails the test rather than testing something else):

- TLS is left out (no certificate here): the public URLs are ``http://`` and ``ws://``
  on the proxy's port instead of ``https://`` and ``wss://``. nginx: the port-80 server
  that redirects to https is dropped, ``listen 443 ssl`` becomes ``listen
  127.0.0.1:<port>``, ``listen [::]:443 ssl`` and the ``ssl_certificate*`` lines are
  dropped. Caddy: the site address ``chat.example.com`` becomes
  ``http://127.0.0.1:<port>`` (no automatic https), the tunnel's ``:8080`` becomes
  ``:<port>``.
- The upstreams ``127.0.0.1:8000`` and ``127.0.0.1:8765`` become the ports the test's API
  and voice server listen on.
- Each proxy runs as a child process, unprivileged (as ``nobody`` when the tests run as
  root), in a temporary prefix of its own. nginx's block (the content of a file included
  in ``http { }``) is wrapped in a main configuration giving ``daemon off``, the pid file,
  the logs and temporary paths in that prefix; Caddy gets ``admin off`` (no admin
  endpoint on port 2019) and its data and config directories in the prefix.

Every proxying directive (upgrade headers, buffering, timeouts, matchers) is kept as
written: removing the nginx block's Upgrade/Connection headers makes the call fail here.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from twilio.request_validator import RequestValidator

from ragio.service import Service
from tests.io.conftest import on_openai
from tests.io.fakes.deepgram_server import FakeDeepgram
from tests.io.fakes.openai_server import FakeOpenAI
from tests.io.fakes.phone import phone_call
from tests.io.processes import free_port, stop
from voiceio.server import VoiceServer, serve_voice

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
SBIN = os.pathsep.join(["/usr/local/sbin", "/usr/sbin", "/sbin"])  # nginx: not on a user's PATH

ACCOUNT = "AC" + "0123456789abcdef" * 2
TOKEN = "telco-auth-token-for-tests"
SPEECH_KEY = "dg-test-key"
GREETING = "Hello, how can I help?"
RETURNS = "# Returns\n\nItems can be returned within thirty days of delivery for a full refund."
REPLY = "You can return an item within thirty days [1]."
CALLER = "+15551234567"
CALL_SID = "CA" + "1" * 32


# ---------------------------------------------------------------- the doc's blocks


def doc_blocks(language: str) -> list[str]:
    """The fenced ``language`` blocks of the "Going live" section, unindented."""
    text = OPERATIONS.read_text(encoding="utf-8")
    start = text.index("\n## Going live\n")
    section = text[start : text.index("\n## ", start + 1)]
    blocks = []
    for indent, body in re.findall(
        rf"^( *)```{language}\n(.*?)^\1```", section, re.MULTILINE | re.DOTALL
    ):
        blocks.append("".join(line[len(indent) :] for line in body.splitlines(keepends=True)))
    return blocks


def replace(text: str, pattern: str, new: str, *, flags: int = 0) -> str:
    """``text`` with every match of ``pattern`` replaced; at least one must match."""
    changed, count = re.subn(pattern, new, text, flags=flags)
    assert count, f"the doc's configuration no longer has {pattern!r}"
    return changed


def upstreams(config: str, api_port: int, voice_port: int) -> str:
    config = replace(config, r"127\.0\.0\.1:8000\b", f"127.0.0.1:{api_port}")
    return replace(config, r"127\.0\.0\.1:8765\b", f"127.0.0.1:{voice_port}")


def nginx_config(block: str, prefix: Path, port: int, api_port: int, voice_port: int) -> str:
    site = replace(
        block,
        r"^server \{\n(?:(?!^\}).)*?return 301 .*?^\}\n",  # the port-80 redirect to https
        "",
        flags=re.MULTILINE | re.DOTALL,
    )
    site = replace(site, r"listen 443 ssl;", f"listen 127.0.0.1:{port};")
    site = replace(site, r" *listen \[::\]:443 ssl;\n", "")
    site = replace(site, r" *ssl_certificate(_key)? .*\n", "")
    site = upstreams(site, api_port, voice_port)
    return f"""\
daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log info;
events {{
    worker_connections 64;
}}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;

{site}
}}
"""


def caddy_config(block: str, port: int, api_port: int, voice_port: int) -> str:
    if ":8080 {" in block:  # the test tunnel's local proxy: it has its global options
        site = replace(block, r"^:8080 \{", f":{port} {{", flags=re.MULTILINE)
        return upstreams(site, api_port, voice_port)
    site = replace(block, r"^chat\.example\.com \{", f"http://127.0.0.1:{port} {{", flags=re.M)
    return "{\n\tadmin off\n}\n\n" + upstreams(site, api_port, voice_port)


# ---------------------------------------------------------------- running a proxy


def unprivileged() -> dict[str, Any]:
    """Popen's arguments to run as nobody when this is root; none otherwise."""
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


@contextmanager
def running_proxy(
    kind: str, block: str, port: int, api_port: int, voice_port: int
) -> Iterator[str]:
    """The proxy ``kind`` serving the doc's ``block`` on 127.0.0.1:``port``; yields its
    base URL once it accepts connections, and stops it (SIGTERM, then SIGKILL)."""
    program = shutil.which(kind, path=os.pathsep.join([os.environ.get("PATH", ""), SBIN]))
    if program is None:
        pytest.fail(f"{kind} is not installed (apt-get install {kind}; scripts/dev.py does)")
    prefix = Path(tempfile.mkdtemp(prefix=f"ragchat-{kind}-"))
    user = unprivileged()
    env = {**os.environ, "HOME": str(prefix)}
    if kind == "nginx":
        config = prefix / "nginx.conf"
        config.write_text(nginx_config(block, prefix, port, api_port, voice_port))
        command = [program, "-p", f"{prefix}/", "-c", str(config), "-e", f"{prefix}/error.log"]
        logs = [prefix / "error.log"]
    else:
        config = prefix / "Caddyfile"
        config.write_text(caddy_config(block, port, api_port, voice_port))
        command = [program, "run", "--config", str(config), "--adapter", "caddyfile"]
        env |= {"XDG_DATA_HOME": f"{prefix}/data", "XDG_CONFIG_HOME": f"{prefix}/config"}
        logs = []
    if user:
        for path in [prefix, *prefix.iterdir()]:
            os.chown(path, user["user"], user["group"])
    output = prefix / "output.log"
    with output.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=prefix, env=env, stdout=out, stderr=subprocess.STDOUT, **user
        )

    def said() -> str:
        return "\n".join(p.read_text(errors="replace") for p in [output, *logs] if p.exists())

    try:
        deadline = time.monotonic() + 15
        while True:
            if process.poll() is not None:
                pytest.fail(f"{kind} exited with {process.returncode}:\n{said()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{kind} did not listen on {port} within 15 s:\n{said()}")
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        stop(process, 5)
        shutil.rmtree(prefix, ignore_errors=True)


# ---------------------------------------------------------------- the service behind it

PROXIES = [
    pytest.param(("nginx", 0), id="nginx"),
    pytest.param(("caddy", 0), id="caddy"),
    pytest.param(("caddy", 1), id="caddy-test-tunnel"),
]


@pytest.fixture(params=PROXIES)
def proxy_kind(request: pytest.FixtureRequest) -> tuple[str, str]:
    kind, index = request.param
    blocks = doc_blocks("caddyfile" if kind == "caddy" else kind)
    assert len(blocks) > index, f"docs/operations.md has no {kind} block #{index + 1}"
    return kind, blocks[index]


@pytest.fixture
def proxy_port() -> int:
    return free_port()


@pytest.fixture
def public(proxy_port: int) -> str:
    """The proxy's address: PUBLIC_BASE_URL is http:// and VOICE_PUBLIC_URL ws:// on it."""
    return f"127.0.0.1:{proxy_port}"


@pytest.fixture
async def speech(serve_fake: Callable[[Any], Awaitable[Any]]) -> FakeDeepgram:
    return await serve_fake(FakeDeepgram(api_key=SPEECH_KEY))


@pytest.fixture
async def model(serve_fake: Callable[[Any], Awaitable[Any]]) -> FakeOpenAI:
    fake = await serve_fake(FakeOpenAI(api_key="sk-test", reply=REPLY))
    fake.word_delay = 0.08  # the answer is written over about 0.6 s
    return fake


@pytest.fixture
def settings_overrides(public: str, speech: FakeDeepgram, model: FakeOpenAI) -> dict[str, Any]:
    return on_openai(
        model,
        voiceai_api_key=SPEECH_KEY,
        voiceai_base_url=speech.base_url,
        telco_account_sid=ACCOUNT,
        telco_auth_token=TOKEN,
        voice_port=free_port(),
        public_base_url=f"http://{public}",
        voice_public_url=f"ws://{public}/voice",
        voice_greeting=GREETING,
    )


@pytest.fixture
async def proxied(
    service: Service,
    api: httpx.AsyncClient,
    nursery: trio.Nursery,
    proxy_kind: tuple[str, str],
    proxy_port: int,
) -> AsyncIterator[httpx.AsyncClient]:
    """The voice server beside the served API, the returns policy in the knowledge base,
    and the doc's proxy in front of both: a client of the proxy."""
    response = await api.post("/documents", json={"name": "returns.md", "text": RETURNS})
    assert response.status_code == 201, response.text
    await nursery.start(partial(serve_voice, service, server=VoiceServer(service)))
    api_port = api.base_url.port
    assert api_port is not None
    kind, block = proxy_kind
    with running_proxy(kind, block, proxy_port, api_port, service.settings.voice_port) as address:
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=15) as client:
            yield client


# ---------------------------------------------------------------- through the proxy


async def test_a_signed_call_through_the_proxy_hears_the_greeting(proxied, public):
    """Twilio opens the media stream at VOICE_PUBLIC_URL, signed over it: the proxy passes
    the WebSocket upgrade to the voice server, which accepts the signature and greets."""
    url = f"ws://{public}/voice"
    with trio.fail_after(20):
        async with phone_call(
            url,
            auth_token=TOKEN,
            caller=CALLER,
            parameters={"caller": CALLER, "call_sid": CALL_SID},
        ) as phone:
            await phone.wait_for_audio(10)
            await phone.hang_up()
    assert phone.heard


async def test_streamed_events_come_through_as_they_are_written(proxied):
    """/chat/stream's first token event arrives while the model is still writing: the
    proxy does not hold the stream back until it ends."""
    question = {"question": "How long do I have to return an item?"}
    arrivals: list[tuple[str, float]] = []
    with trio.fail_after(20):
        async with proxied.stream("POST", "/chat/stream", json=question) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    arrivals.append((line.removeprefix("event: "), trio.current_time()))
    events = [name for name, _ in arrivals]
    assert events[0] == "token" and events[-1] == "done", events
    assert arrivals[-1][1] - arrivals[0][1] > 0.3, "the events arrived all at once"


async def test_a_signed_voice_webhook_through_the_proxy_gives_the_stream_url(proxied, public):
    """Twilio's POST to the number's voice URL (PUBLIC_BASE_URL + /webhook/voice), signed
    over that URL, is answered with TwiML naming VOICE_PUBLIC_URL."""
    form = {
        "CallSid": CALL_SID,
        "AccountSid": ACCOUNT,
        "From": CALLER,
        "To": "+14155238886",
        "Direction": "inbound",
        "CallStatus": "ringing",
    }
    signature = RequestValidator(TOKEN).compute_signature(f"http://{public}/webhook/voice", form)
    response = await proxied.post(
        "/webhook/voice", data=form, headers={"X-Twilio-Signature": signature}
    )
    assert response.status_code == 200, response.text
    root = ET.fromstring(response.text)  # noqa: S314 (the service's own markup)
    [stream] = root.iter("Stream")
    assert stream.get("url") == f"ws://{public}/voice"
    assert [element.tag for element in root.iter()] == ["Response", "Connect", "Stream"] + [
        "Parameter"
    ] * len(stream)
