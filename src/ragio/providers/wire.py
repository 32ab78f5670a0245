"""What every provider's HTTP client checks of a reply as it arrives, below the SDK.

The SDKs read a reply each in its own way (httpx's ``.text`` with the declared charset,
``json.loads`` of the bytes, a UTF-8 decoder of server-sent events), and each fails in its
own way on bytes that are no reply: a UnicodeDecodeError, a charset that is no text
encoding (``base64``) crashing httpx's decoder, a body cut off raised as a connection
error. So the checks sit under them, as event hooks on the httpx client each SDK is given
(``httpx`` for google-genai, ``httpx2`` for openai and anthropic): one place for every
provider, whole, streamed and for embeddings.

Any reply is refused with a BadReply (rule 6 moves on to the next provider) when it is
larger than MAX_PROVIDER_REPLY_BYTES: counted as it arrives, whole or streamed, before
an SDK holds more of it, so that memory stays bounded whatever a server sends (its
Content-Length, when it gives one, is refused before any of it is read). Replies are
asked for plain or gzipped; a gzipped one is decompressed here, a piece at a time, and
counted decompressed as well as on the wire, so a small body that inflates past the
limit is refused as soon as it passes it. A 2xx reply is refused too when

- its Content-Type names a charset other than UTF-8 (or US-ASCII, its subset, read as
  UTF-8): JSON and server-sent events are UTF-8 by their specifications, and an SDK that
  trusts the label decodes garbage;
- its bytes are not UTF-8;
- it ends before its Content-Length or its last chunk: the connection closed mid-body.

Any other status keeps its meaning (a 429 is still rate limited): its body is read as
UTF-8, bad bytes and NULs replaced, so that the SDK can make its error of it whatever it
holds.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

import attrs
import httpx
import httpx2

from ragio.providers.failures import BadReply

C = TypeVar("C", httpx.AsyncClient, httpx2.AsyncClient)

UTF8 = "utf-8"
ASCII = "ascii"  # a label some servers give JSON: UTF-8's subset, read as UTF-8
GZIP = ("gzip", "x-gzip")
PIECE = 64 * 1024  # most bytes one step of decompressing makes


def checking_replies(client: C, limit: int, refusal: type[BadReply] = BadReply) -> C:
    """``client`` with every reply it receives checked as it arrives (see the module), and
    refused past ``limit`` bytes (MAX_PROVIDER_REPLY_BYTES).

    ``refusal`` is the error a refused reply raises: an SDK that wraps any other error of
    its client's as a connection error (and retries it) needs one of its own errors.
    """
    library = _HTTPX2 if isinstance(client, httpx2.AsyncClient) else _HTTPX
    check = Check(library, limit, refusal)
    hooks: dict[str, list[Any]] = client.event_hooks
    client.event_hooks = {
        "request": [*hooks["request"], _ask_plain_or_gzip],
        "response": [*hooks["response"], check],
    }
    return client


async def _ask_plain_or_gzip(request: Any) -> None:
    """Only what ``_Body`` decompresses, counting: httpx would also ask for deflate (and
    brotli or zstd when installed), and decompress them whole."""
    request.headers["accept-encoding"] = "gzip"


class _Body:
    """A response's body as it arrives: counted, decompressed, and checked (a 2xx) or
    mended (any other status). Read on where it was left when read again (the openai SDK
    drains what is left of a stream after its last event)."""

    def __init__(
        self, stream: Any, status: int, gzipped: bool, check: Check, cut_off: type[Exception]
    ) -> None:
        self._stream = stream
        self._cut_off = cut_off
        self._status = status
        self._check = check
        self._success = 200 <= status < 300
        self._decoder = codecs.getincrementaldecoder(UTF8)("strict" if self._success else "replace")
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
        self._received = self._size = 0

    @property
    def elapsed(self) -> Any:
        """httpx2 reads a response's time from its stream (httpx sets it on closing)."""
        return getattr(self._stream, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                self._received += len(chunk)
                self._within_limit(self._received)
                for piece in self._inflated(chunk):
                    self._size += len(piece)
                    self._within_limit(self._size)
                    if self._success:
                        self._utf8(piece)
                        yield piece
                    else:
                        yield _mended(self._decoder.decode(piece))
        except self._cut_off as error:
            raise self._refused("a body cut off before its end") from error
        if self._inflater is not None and not self._inflater.eof:
            raise self._refused("a body cut off before its end")
        if self._success:
            self._utf8(b"", final=True)
        else:
            yield _mended(self._decoder.decode(b"", final=True))

    def _inflated(self, chunk: bytes) -> Iterator[bytes]:
        """``chunk`` decompressed, in pieces of at most PIECE bytes; as it is when plain."""
        if self._inflater is None:
            yield chunk
            return
        while chunk:
            try:
                piece = self._inflater.decompress(chunk, PIECE)
            except zlib.error:
                raise self._refused("a gzipped body that does not decompress") from None
            chunk = self._inflater.unconsumed_tail
            if piece:
                yield piece

    def _within_limit(self, size: int) -> None:
        if size > self._check.limit:
            raise self._refused(f"a reply larger than {megabytes(self._check.limit)}")

    def _refused(self, reason: str) -> BadReply:
        return self._check.refusal(reason, self._status)

    def _utf8(self, chunk: bytes, final: bool = False) -> None:
        try:
            self._decoder.decode(chunk, final)
        except UnicodeDecodeError:
            raise self._refused("a body that is not UTF-8") from None

    async def aclose(self) -> None:
        await self._stream.aclose()


class _HttpxBody(_Body, httpx.AsyncByteStream):
    pass


class _Httpx2Body(_Body, httpx2.AsyncByteStream):
    pass


@attrs.frozen
class _Library:
    body: type[_Body]
    cut_off: type[Exception]  # what a connection closed before the body's end raises


_HTTPX = _Library(_HttpxBody, httpx.RemoteProtocolError)
_HTTPX2 = _Library(_Httpx2Body, httpx2.RemoteProtocolError)


@attrs.frozen
class Check:
    """The response hook: checks the head, and puts ``_Body`` between the body and the SDK."""

    library: _Library
    limit: int
    refusal: type[BadReply]

    @classmethod
    def of(cls, client: Any) -> Check | None:
        """The check ``checking_replies`` gave ``client``; None when it has other hooks."""
        hooks = client.event_hooks
        checks = [hook for hook in hooks["response"] if isinstance(hook, Check)]
        if hooks["request"] != [_ask_plain_or_gzip] or hooks["response"] != checks[:1]:
            return None
        return checks[0]

    def head(
        self, status: int, content_encodings: list[str], length: str, charset: str | None
    ) -> bool:
        """Whether the body is gzipped (to be decompressed by ``_Body``), by the head's
        Content-Encoding values, Content-Length and declared charset; the refusal when
        the head alone says the reply is refused."""
        encodings = [
            value.strip().lower()
            for value in ",".join(content_encodings).split(",")
            if value.strip().lower() not in ("", "identity")
        ]
        if encodings and (len(encodings) > 1 or encodings[0] not in GZIP):
            raise self.refusal("a body compressed in a way it was not asked for", status)
        if length.isdigit() and int(length) > self.limit:
            raise self.refusal(f"a reply larger than {megabytes(self.limit)}", status)
        codec = _charset(charset)
        if 200 <= status < 300:
            if codec == "":
                raise self.refusal("a body in an unknown charset", status)
            if codec is not None and codec not in (UTF8, ASCII):
                raise self.refusal(f"a body in a charset other than UTF-8 ({codec})", status)
        return bool(encodings)

    def body(self, stream: Any, status: int, gzipped: bool, cut_off: type[Exception]) -> _Body:
        """``stream`` (raw bytes, as they arrive) checked; ``cut_off`` is what it raises
        when the connection ends before the body's end."""
        return _Body(stream, status, gzipped, self, cut_off)

    async def __call__(self, response: Any) -> None:
        status = response.status_code
        headers = response.headers
        gzipped = self.head(
            status,
            headers.get_list("content-encoding"),
            headers.get("content-length", ""),
            response.charset_encoding,
        )
        if gzipped:  # decompressed by _Body: httpx is to pass it on as it is
            del headers["content-encoding"]
            headers.pop("content-length", None)
        charset = _charset(response.charset_encoding)
        if charset is not None and charset != UTF8:
            # checked (ASCII is UTF-8's subset) or mended to UTF-8 by _Body: labelled so
            media_type = response.headers.get("content-type", "").split(";")[0].strip()
            response.headers["content-type"] = f"{media_type}; charset={UTF8}"
        library = self.library
        response.stream = library.body(response.stream, status, gzipped, self, library.cut_off)


def megabytes(size: int) -> str:
    """``size`` bytes as a reason shows them: "64 MB", "1.5 MB"."""
    return f"{round(size / 2**20, 1):g} MB"


def _mended(text: str) -> bytes:
    """Text decoded with its bad bytes replaced, as UTF-8 without NULs: ``json.loads`` takes
    bytes starting with a NUL for UTF-16 or -32, and raises a UnicodeDecodeError."""
    return text.replace("\x00", "\ufffd").encode(UTF8)


def _charset(declared: str | None) -> str | None:
    """The codec a declared charset names ("utf-8", "utf-16"…), "" for one that names no
    text encoding Python knows (``x-unknown``, ``base64``), None when none is declared."""
    if declared is None:
        return None
    try:
        codec = codecs.lookup(declared)
    except (LookupError, ValueError):  # ValueError: a name with a NUL in it
        return ""
    return codec.name if getattr(codec, "_is_text_encoding", True) else ""
