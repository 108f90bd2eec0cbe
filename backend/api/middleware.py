"""ASGI middleware: the request-body limit, for declared and for chunked (streamed) bodies."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.errors import PayloadTooLarge


class BodySizeLimit:
    """Refuse bodies over `limit` bytes with a 413.

    A Content-Length over the limit is refused before the route runs. A body without one
    (Transfer-Encoding: chunked) is counted as it is read: the read that crosses the limit raises
    PayloadTooLarge, so nothing over the limit is ever buffered, and whatever response the app then
    produces (FastAPI turns a failed body read into a 400) is replaced by the same 413.
    """

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _send_413(send, self._message(f"request body of {declared} bytes"))
            return
        received = 0
        exceeded = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise PayloadTooLarge(self._message("request body"))
            return message

        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if started:
                    return
                started = True
                if exceeded:
                    await _send_413(send, self._message("request body"))
                    return
            if not exceeded:
                await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except PayloadTooLarge:
            if not exceeded:
                raise
            if not started:
                await _send_413(send, self._message("request body"))

    def _message(self, what: str) -> str:
        return f"{what} exceeds the limit of {self.limit} bytes (MAX_REQUEST_BYTES)"


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _send_413(send: Send, detail: str) -> None:
    body = json.dumps({"detail": detail, "error": "PayloadTooLarge"}).encode()
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
