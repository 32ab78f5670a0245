"""What every provider's HTTP client checks of a reply as it arrives, below the SDK.

The SDKs read a reply each in its own way (httpx's ``.text`` with the declared charset,
``json.loads`` of the bytes, a UTF-8 decoder of server-sent events), and each fails in its
own way on bytes that are no reply: a UnicodeDecodeError, a charset that is no text
encoding (``base64``) crashing httpx's decoder, a body cut off raised as a connection
error. So the checks sit under them, as event hooks on the httpx client each SDK is given
(``httpx`` for google-genai, ``httpx2`` for openai and anthropic): one place for every
provider, whole, streamed and for embeddings.

A 2xx reply is refused with a BadReply (rule 6 moves on to the next provider) when

- its Content-Type names a charset other than UTF-8: JSON and server-sent events are
  UTF-8 by their specifications, and an SDK that trusts the label decodes garbage;
- its bytes are not UTF-8;
- it ends before its Content-Length or its last chunk: the connection closed mid-body.

Any other status keeps its meaning (a 429 is still rate limited): its body is read as
UTF-8, bad bytes and NULs replaced, so that the SDK can make its error of it whatever it
holds.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import attrs
import httpx
import httpx2

from ragio.providers.failures import BadReply

C = TypeVar("C", httpx.AsyncClient, httpx2.AsyncClient)

UTF8 = "utf-8"


def checking_replies(client: C, refusal: type[BadReply] = BadReply) -> C:
    """``client`` with every reply it receives checked as it arrives (see the module).

    ``refusal`` is the error a refused reply raises: an SDK that wraps any other error of
    its client's as a connection error (and retries it) needs one of its own errors.
    """
    library = _HTTPX2 if isinstance(client, httpx2.AsyncClient) else _HTTPX
    check = _Check(library, refusal)
    hooks: dict[str, list[Any]] = client.event_hooks
    client.event_hooks = {"request": hooks["request"], "response": [*hooks["response"], check]}
    return client


class _Body:
    """A response's body as it arrives: checked (a 2xx) or mended (any other status)."""

    def __init__(self, stream: Any, status: int, check: _Check) -> None:
        self._stream = stream
        self._status = status
        self._check = check

    @property
    def elapsed(self) -> Any:
        """httpx2 reads a response's time from its stream (httpx sets it on closing)."""
        return getattr(self._stream, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        success = 200 <= self._status < 300
        decoder = codecs.getincrementaldecoder(UTF8)("strict" if success else "replace")
        try:
            async for chunk in self._stream:
                if success:
                    self._utf8(decoder, chunk)
                    yield chunk
                else:
                    yield _mended(decoder.decode(chunk))
            if success:
                self._utf8(decoder, b"", final=True)
            else:
                yield _mended(decoder.decode(b"", final=True))
        except self._check.library.cut_off as error:
            raise self._check.refusal("a body cut off before its end", self._status) from error

    def _utf8(self, decoder: codecs.IncrementalDecoder, chunk: bytes, final: bool = False) -> None:
        try:
            decoder.decode(chunk, final)
        except UnicodeDecodeError:
            raise self._check.refusal("a body that is not UTF-8", self._status) from None

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
class _Check:
    """The response hook: checks the head, and puts ``_Body`` between the body and the SDK."""

    library: _Library
    refusal: type[BadReply]

    async def __call__(self, response: Any) -> None:
        status = response.status_code
        charset = _charset(response.charset_encoding)
        if 200 <= status < 300:
            if charset == "":
                raise self.refusal("a body in an unknown charset", status)
            if charset is not None and charset != UTF8:
                raise self.refusal(f"a body in a charset other than UTF-8 ({charset})", status)
        elif charset is not None and charset != UTF8:
            # mended to UTF-8 by _Body: labelled so, whatever it said
            media_type = response.headers.get("content-type", "").split(";")[0].strip()
            response.headers["content-type"] = f"{media_type}; charset={UTF8}"
        response.stream = self.library.body(response.stream, status, self)


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
