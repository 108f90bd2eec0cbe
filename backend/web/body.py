"""A response body read to at most N bytes *after* decompression, whatever the server sends.

httpx's aiter_bytes() inflates each received chunk whole before the caller can count it: a 306 kB
gzip page became 141 MiB in memory before WEB_FETCH_MAX_BYTES applied. Here the raw bytes are read
and inflated with zlib's max_length, so no more than the limit (+1 byte, to know there was more) is
ever produced. We ask for gzip and deflate (the encodings zlib reads; they save the bandwidth of
identity) and refuse any other encoding a server sends anyway: brotli and zstd need packages this
project does not install, and a chain of encodings would need a bound at every layer.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import httpx

from backend.errors import PageFetchError

ACCEPT_ENCODING = "gzip, deflate"


@dataclass(frozen=True)
class Body:
    data: bytes
    truncated: str | None  # why the body was cut (names the limit), None when read whole


async def read_body(response: httpx.Response, max_bytes: int) -> Body:
    """At most max_bytes of the decoded body; reading stops (and the rest is never downloaded) as soon
    as either the bytes received or the bytes inflated pass the limit."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    inflater = _Inflater(encoding)
    out = bytearray()
    received = 0
    async for chunk in response.aiter_raw():
        received += len(chunk)
        out += inflater.feed(chunk, max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            what = f"{encoding} inflated past" if inflater.compressed else "larger than"
            return Body(bytes(out[:max_bytes]), f"the page is {what} {max_bytes} bytes (WEB_FETCH_MAX_BYTES)")
        if received > max_bytes:  # inflating nothing from a long compressed stream is a limit too
            return Body(bytes(out), f"the page sent more than {max_bytes} bytes (WEB_FETCH_MAX_BYTES)")
    return Body(bytes(out), None)


class _Inflater:
    """One content encoding: identity, gzip or deflate (zlib-wrapped, or raw as some servers send it)."""

    def __init__(self, encoding: str) -> None:
        if encoding in ("", "identity"):
            self._zlib = None
        elif encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj()
        else:
            raise PageFetchError(
                f"content encoding {encoding!r} is not supported (we accept {ACCEPT_ENCODING})"
            )
        self._encoding = encoding
        self._first = True

    @property
    def compressed(self) -> bool:
        return self._zlib is not None

    def feed(self, data: bytes, room: int) -> bytes:
        """At most `room` bytes of output for this input; what did not fit stays unread (the caller
        stops once the output is full)."""
        if self._zlib is None:
            return data[:room]
        first, self._first = self._first, False
        try:
            return self._zlib.decompress(data, max(room, 1))  # max_length 0 would mean "no limit"
        except zlib.error as exc:
            if first and self._encoding == "deflate":
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, without the zlib header
                return self.feed(data, room)
            raise PageFetchError(f"the page's {self._encoding} body is damaged: {exc}") from None
