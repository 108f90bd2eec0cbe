"""ASGI middleware: request ids, and the request-body limit for declared and chunked bodies."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.api.errors import OPENAI_PREFIX, error_payload, log_failure, openai_error
from backend.api.request_context import REQUEST_ID_HEADER, request_id_var
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
            await _send_413(send, self._message(f"request body of {declared} bytes"), scope["path"])
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
                    await _send_413(send, self._message("request body"), scope["path"])
                    return
            if not exceeded:
                await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except PayloadTooLarge:
            if not exceeded:
                raise
            if not started:
                await _send_413(send, self._message("request body"), scope["path"])

    def _message(self, what: str) -> str:
        return f"{what} exceeds the limit of {self.limit} bytes (MAX_REQUEST_BYTES)"


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _send_413(send: Send, detail: str, path: str) -> None:
    body = {"detail": detail, "error": "PayloadTooLarge", "request_id": request_id_var.get()}
    await send_json(send, 413, body, path=path)


async def send_json(send: Send, status: int, body: dict[str, Any], *, path: str = "") -> None:
    """A complete JSON response, sent from middleware (where no Response class runs); in OpenAI's
    error shape under /v1/."""
    if path.startswith(OPENAI_PREFIX):
        status, body = openai_error(status, body)
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


# --- request ids ------------------------------------------------------------------------------------

_VALID_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


class RequestId:
    """Give every request an id (the caller's X-Request-ID when it is a sane token, else a new one),
    echo it in the response and make it available to logs and error bodies of that request.

    It also answers what nothing inside answered: an exception that escaped every handler becomes the
    same JSON 500 the handlers give (logged with its traceback and the id), never a bare stack trace.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wanted = REQUEST_ID_HEADER.lower().encode()
        given = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == wanted), "")
        request_id = given if _VALID_ID.fullmatch(given) else uuid.uuid4().hex
        request_id_var.set(request_id)  # this request's task context only
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), (wanted, request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:
                raise
            log_failure(exc, f"{scope.get('method')} {scope.get('path')}")
            await send_json(send_with_id, *error_payload(exc), path=str(scope.get("path", "")))
