#!/usr/bin/env python3
"""Time the voice channel: what the service adds to a spoken turn, and what a caller waits.

    .venv/bin/python scripts/bench_voice.py
    .venv/bin/python scripts/bench_voice.py --questions 40 --calls 20 --barge-ins 10

Everything real but the providers: the embedded PostgreSQL, the service with its voice
server, and callers on the fake phone line (tests/io/fakes/phone.py) streaming a question
spoken by espeak-ng at real-time pace over a real WebSocket. The speech provider is the
fake Deepgram (its endpointing on the real audio; its transcript fixed, since
pocketsphinx is not what is timed) and the model is the fake OpenAI server (answers and
embeddings). Four measurements:

1. **server-added latency**, with instant fakes: from the final transcript leaving the
   speech provider to the first frame of the answer reaching the phone (retrieval, the
   model call, the first sentence's synthesis and the first frame, with every provider
   answering at once);
2. **voice-to-voice latency**, with fakes that model the providers: the final transcript
   300 ms after speech ends (the provider's endpointing on the real audio), the model's
   first token after 400 ms, the first byte of speech after 200 ms: from the end of the
   caller's speech (its last frame above -45 dBFS) to the first frame of the answer; then
   again with the model writing a word every 20 ms after its first, since a sentence is
   said only once it is whole;
3. the second, **20 calls at once** (``--calls``, the model writing at 50 words/s, or
   ``--words-per-second 0``: whole replies, as the first line's model) on this machine;
   the worst gap between two frames of an answer as the phone received them, and
   the worst stall of its playback (the phone played everything it had and waited), as the
   phones saw them (their own process is busy too: 20 phone lines) and as the service
   saw them (``stalled_ms`` of
   GET /voice/calls: its pacing fell behind playback);
4. **barge-in**: from the first frame of a caller talking over an answer to the ``clear``
   reaching the phone.
"""

from __future__ import annotations

import argparse
import base64
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.io.audio import speak  # noqa: E402
from tests.io.conftest import serve_app  # noqa: E402
from tests.io.fakes.deepgram_server import FakeDeepgram  # noqa: E402
from tests.io.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.io.fakes.phone import PhoneCall, phone_call  # noqa: E402
from tests.io.processes import RAGCHAT, clean_environ, free_port  # noqa: E402

from ragcore.voice.audio import level_db  # noqa: E402

TOKEN = "bench-telco-token"  # noqa: S105 (the fake line signs with it)
QUESTION = "How long do I have to return an item"
ANSWER = (
    "Items can be returned within thirty days of delivery for a full refund [1]. "
    "Refunds reach the original payment method within five business days [1]."
)
INTERRUPTION = "Can I get a refund"
DOCUMENT = (
    "# Returns\n\nItems can be returned within thirty days of delivery for a full refund. "
    "Refunds reach the original payment method within five business days."
)
SPEECH_DB = -45.0  # a frame louder than this is speech (espeak's pauses are digital silence)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{name:<44} n={len(ms):<4} p50 {statistics.median(ms):7.1f} ms   "
        f"p95 {percentile(ms, 0.95):7.1f} ms   max {max(ms):7.1f} ms"
    )


class Bench:
    def __init__(self, url: str, api_url: str, providers: Providers, question: bytes) -> None:
        self.url = url
        self.api_url = api_url
        self.providers = providers
        self.question = question
        self.numbers = iter(range(10**6))

    def call(self) -> Any:
        number = next(self.numbers)
        sid = f"CA{number:032d}"
        return phone_call(
            self.url,
            auth_token=TOKEN,
            call_sid=sid,
            parameters={"caller": "+15550001111", "call_sid": sid},
        )

    async def greeted(self, phone: PhoneCall) -> None:
        await phone.wait_for_audio(15)
        await phone.wait_until_quiet(400, 30)
        await phone.wait_until_played(15)

    async def turn(self, phone: PhoneCall) -> dict[str, float]:
        """Ask once; the times of the turn, on trio's clock."""
        sent_before = len(phone.sent)
        heard_before = len(phone.messages("media"))
        await phone.say(self.question)
        loud = [
            at
            for at, message in phone.sent[sent_before:]
            if message.get("event") == "media" and level_db(_payload(message)) > SPEECH_DB
        ]
        speech_end = loud[-1] + 0.02
        await phone.wait_for_audio(20, after=len(phone.heard))
        await phone.wait_until_quiet(400, 30)
        await phone.wait_until_played(20)
        media = phone.messages("media")[heard_before:]
        finals = [
            at
            for at, text in await self.providers.transcripts()
            if text and at >= speech_end - 0.05
        ]
        gaps = [b.at - a.at for a, b in zip(media, media[1:], strict=False)]
        played = [p for p in phone.played if p.at >= media[0].at]
        stalls = [
            b.at - (a.at + len(a.audio) / 8000) for a, b in zip(played, played[1:], strict=False)
        ]
        return {
            "worst_stall": max([0.0, *stalls]),
            "speech_end": speech_end,
            "final": min(finals),
            "first_frame": media[0].at,
            "worst_gap": max(gaps) if gaps else 0.0,
        }


def _payload(message: dict[str, Any]) -> bytes:
    return base64.b64decode(message["media"]["payload"])


async def sequential(bench: Bench, questions: int, per_call: int = 10) -> list[dict[str, float]]:
    turns = []
    while len(turns) < questions:
        async with bench.call() as phone:
            await bench.greeted(phone)
            for _ in range(min(per_call, questions - len(turns))):
                turns.append(await bench.turn(phone))
                await phone.pause(300)
            await phone.hang_up()
    return turns


async def concurrent(bench: Bench, calls: int, per_call: int) -> list[dict[str, float]]:
    turns: list[dict[str, float]] = []

    async def one(delay: float) -> None:
        await trio.sleep(delay)
        async with bench.call() as phone:
            await bench.greeted(phone)
            for _ in range(per_call):
                turns.append(await bench.turn(phone))
                await phone.pause(300)
            await phone.hang_up()

    async with trio.open_nursery() as nursery:
        for number in range(calls):
            nursery.start_soon(one, number * 0.05)
    return turns


async def barge_ins(bench: Bench, interruption: bytes, count: int) -> list[float]:
    """Seconds from the caller's first word over an answer to the ``clear``."""
    latencies = []
    async with bench.call() as phone:
        await bench.greeted(phone)
        for _ in range(count):
            cleared = len(phone.messages("clear"))
            await phone.say(bench.question)
            await phone.wait_for_audio(20, after=len(phone.heard))
            await trio.sleep(0.8)
            sent_before = len(phone.sent)
            await phone.say(interruption)
            first_word = next(
                at
                for at, message in phone.sent[sent_before:]
                if message.get("event") == "media" and level_db(_payload(message)) > SPEECH_DB
            )
            clears = phone.messages("clear")[cleared:]
            if clears:
                latencies.append(clears[0].at - first_word)
            await phone.wait_until_quiet(400, 30)
            await phone.wait_until_played(20)
            await phone.pause(300)
        await phone.hang_up()
    return latencies


async def run(args: argparse.Namespace) -> None:
    question = await trio.to_thread.run_sync(speak, QUESTION)
    interruption = await trio.to_thread.run_sync(speak, INTERRUPTION)
    with tempfile.TemporaryDirectory(prefix="bench-voice-") as scratch:
        async with trio.open_nursery() as nursery:
            await measure(args, nursery, Path(scratch), question, interruption)
            nursery.cancel_scope.cancel()


async def measure(
    args: argparse.Namespace,
    nursery: trio.Nursery,
    scratch: Path,
    question: bytes,
    interruption: bytes,
) -> None:
    """The callers here, the providers in a process of their own (``Providers``), the
    service in a process of its own, as ``ragchat serve`` runs it (the API and the voice
    server on the embedded database), so that none shares another's event loop."""
    providers = await Providers.start(nursery)
    port = free_port()
    service = service_process(
        scratch,
        data_dir=scratch / "data",
        openai_api_key=Providers.model_key,
        openai_base_url=providers.model_url + "/v1",
        embedding_dimensions=64,
        voiceai_api_key=Providers.speech_key,
        voiceai_base_url=providers.speech_url,
        telco_auth_token=TOKEN,
        voice_port=port,
        voice_public_url=f"ws://127.0.0.1:{port}",
        voice_greeting="Hello.",
        voice_max_calls=max(20, args.calls),
        app_workers=args.workers,
    )
    api_url = await trio.to_thread.run_sync(service.__enter__)
    try:
        async with httpx.AsyncClient(base_url=api_url, timeout=30) as api:
            added = await api.post("/documents", json={"name": "returns.md", "text": DOCUMENT})
            added.raise_for_status()
        await scenarios(
            args,
            Bench(f"ws://127.0.0.1:{port}", api_url, providers, question),
            providers,
            interruption,
        )
    finally:
        await trio.to_thread.run_sync(service.__exit__, None, None, None)


@contextmanager
def service_process(scratch: Path, **settings: Any) -> Iterator[str]:
    """``ragchat serve`` on a free port, its log in a file (a pipe nobody reads fills up
    and stops a chatty service); yields its base URL once /health answers."""
    port = free_port()
    with open(scratch / "service.log", "w") as log:
        process = subprocess.Popen(
            [*RAGCHAT, "serve"],
            cwd=scratch,
            env=clean_environ(app_port=port, **settings),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            voice = f"http://127.0.0.1:{settings['voice_port']}"
            while not (_healthy(url) and _healthy(voice, "/metrics")):  # the voice server too
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = (scratch / "service.log").read_text()[-3000:]
                    raise RuntimeError(f"ragchat serve did not start:\n{tail}")
                time.sleep(0.1)
            yield url
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _healthy(url: str, path: str = "/health") -> bool:
    try:
        return httpx.get(f"{url}{path}", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


async def scenarios(
    args: argparse.Namespace,
    bench: Bench,
    providers: Providers,
    interruption: bytes,
) -> None:
    await sequential(bench, 3)  # warm-up: connections, caches
    if "added" in args.only:
        await server_added(args, bench)
    if "voice" in args.only:
        await voice_to_voice(args, bench, providers)
    if "load" in args.only:
        await under_load(args, bench, providers)
    if "barge" in args.only:
        await providers.pace(0.0, 0.0, 0.0)
        latencies = await barge_ins(bench, interruption, args.barge_ins)
        print(summary("barge-in: caller's first word -> clear", latencies))
        print(f"  barged in {len(latencies)} of {args.barge_ins} times")


async def server_added(args: argparse.Namespace, bench: Bench) -> None:
    instant = await sequential(bench, args.questions)
    print_span("server-added: final transcript -> first frame", instant, "final", "first_frame")


def print_span(name: str, turns: list[dict[str, float]], start: str, end: str) -> None:
    """The times from ``start`` to ``end`` of ``turns``, summed up on a line."""
    print(summary(name, [turn[end] - turn[start] for turn in turns]))


async def voice_to_voice(args: argparse.Namespace, bench: Bench, providers: Providers) -> None:
    await providers.pace(0.4, 0.0, 0.2)
    modelled = await sequential(bench, args.questions)
    name = "voice-to-voice: end of speech -> first frame"
    print_span(name, modelled, "speech_end", "first_frame")
    print_span("  of which speech end -> final transcript", modelled, "speech_end", "final")
    await providers.pace(0.4, 0.02, 0.2)
    paced = await sequential(bench, args.questions)
    print_span("  the model writing 50 words/s after that", paced, "speech_end", "first_frame")


async def under_load(args: argparse.Namespace, bench: Bench, providers: Providers) -> None:
    word_delay = 1 / args.words_per_second if args.words_per_second else 0.0
    await providers.pace(0.4, word_delay, 0.2)
    loaded = await concurrent(bench, args.calls, args.per_call)
    pace = f"{args.words_per_second:g} words/s" if args.words_per_second else "whole replies"
    name = f"{args.calls} calls at once ({pace}): voice-to-voice"
    print_span(name, loaded, "speech_end", "first_frame")
    # (the provider's transcripts are not told apart by call: the stages below, as the
    # service recorded each turn, split the time instead)
    async with httpx.AsyncClient(base_url=bench.api_url, timeout=30) as api:
        calls = (await api.get("/voice/calls", params={"limit": args.calls})).json()["calls"]
    stages = [turn["stages"] for call in calls for turn in call["turns"]]
    for key in sorted({k for st in stages for k in st} - {"stalled_ms"}):
        values = [st[key] / 1000 for st in stages if isinstance(st.get(key), int | float)]
        if values:
            print(summary(f"  as the service saw it: {key}", values))
    print(
        summary(
            "  as the service saw it: transcript -> sentence",
            [st["first_sentence_ms"] / 1000 for st in stages],
        )
    )
    print(
        summary(
            "  as the service saw it: transcript -> frame",
            [
                (st["first_sentence_ms"] + st["first_audio_ms"] + st["first_frame_ms"]) / 1000
                for st in stages
            ],
        )
    )
    print(
        summary(
            "  as the service saw it: playback ran dry",
            [st.get("stalled_ms", 0) / 1000 for st in stages],
        )
    )
    print(
        summary(
            f"{args.calls} calls at once: worst gap between frames",
            [t["worst_gap"] for t in loaded],
        )
    )
    print(
        summary(
            f"{args.calls} calls at once: worst playback stall",
            [t["worst_stall"] for t in loaded],
        )
    )


class Providers:
    """The fake model (OpenAI: answers and embeddings) and the fake speech provider
    (Deepgram: transcripts and speech) in a process of their own, driven over its standard
    input. Providers run on their own machines: in the callers' process, the twenty phone
    lines' work delayed them (with 20 calls the model's 400 ms measured 494 at the median,
    an embedding 23 ms), and that delay was counted as the service's. They still share this
    machine's two cores."""

    model_key = "bench-model-key"
    speech_key = "bench-speech-key"

    def __init__(self, process: subprocess.Popen[str], urls: dict[str, str]) -> None:
        self.process = process
        self.model_url = urls["model"]
        self.speech_url = urls["speech"]
        self.lock = trio.Lock()  # one question and its answer at a time on the pipe
        # trio's clock here is time.monotonic() plus an offset of its own
        self.offset = trio.current_time() - time.monotonic()

    @classmethod
    async def start(cls, nursery: trio.Nursery) -> Providers:
        process = subprocess.Popen(
            [sys.executable, __file__, "providers", cls.model_key, cls.speech_key],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        urls = json.loads(await trio.to_thread.run_sync(_line_of, process))
        providers = cls(process, urls)
        nursery.start_soon(providers._stop_at_cancel)
        return providers

    async def _ask(self, command: str) -> Any:
        assert self.process.stdin is not None
        async with self.lock:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
            return json.loads(await trio.to_thread.run_sync(_line_of, self.process))

    async def pace(self, chat_delay: float, word_delay: float, first_byte_delay: float) -> None:
        """The model's first token after ``chat_delay`` s, each next word ``word_delay`` s
        later; speech's first byte after ``first_byte_delay`` s."""
        await self._ask(f"pace {chat_delay} {word_delay} {first_byte_delay}")

    async def transcripts(self) -> list[tuple[float, str]]:
        """Every transcript the speech provider has sent, with when, on trio's clock."""
        sent = await self._ask("transcripts")
        return [(at + self.offset, text) for at, text in sent]

    async def _stop_at_cancel(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            self.process.terminate()
            self.process.wait(10)


def _line_of(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError("the fake providers' process ended")
    return line


async def serve_providers(model_key: str, speech_key: str) -> None:
    """The fake providers' process: their URLs on a line, then an answer a line for each
    command (``pace …``, ``transcripts``)."""
    model = FakeOpenAI(api_key=model_key, reply=ANSWER)
    speech = FakeDeepgram(api_key=speech_key)
    speech.transcriber = lambda audio: QUESTION.lower()
    async with trio.open_nursery() as nursery:
        model_url, _ = await serve_app(model, nursery)
        speech.base_url, _ = await serve_app(speech, nursery)
        print(json.dumps({"model": model_url, "speech": speech.base_url}), flush=True)
        while line := await trio.to_thread.run_sync(sys.stdin.readline):
            command, *values = line.split()
            if command == "pace":
                model.chat_delay, model.word_delay, speech.first_byte_delay = map(float, values)
                print("null", flush=True)
            elif command == "transcripts":
                offset = trio.current_time() - time.monotonic()
                sent = [
                    (at - offset, text)
                    for listener in speech.listeners
                    for at, text in listener.transcripts
                ]
                print(json.dumps(sent), flush=True)
        nursery.cancel_scope.cancel()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "providers":
        trio.run(serve_providers, sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=30, help="questions per measurement")
    parser.add_argument("--calls", type=int, default=20, help="calls at once")
    parser.add_argument("--per-call", type=int, default=2, help="questions per concurrent call")
    parser.add_argument("--barge-ins", type=int, default=10)
    parser.add_argument(
        "--words-per-second",
        type=float,
        default=50,
        help="how fast the model writes after its first token under load (0: the whole "
        "reply with the first token, as the voice-to-voice line's model)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="APP_WORKERS of the service (default 0: `serve`'s own, an API process per core "
        "with the voice server in a process of its own; 1: everything in one process)",
    )
    parser.add_argument(
        "--only",
        default="added,voice,load,barge",
        help="which measurements, comma-separated: added, voice, load, barge",
    )
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  (figures as they come)
    trio.run(run, parser.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
