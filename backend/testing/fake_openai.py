"""A fake OpenAI-compatible server on 127.0.0.1 for tests: `POST /v1/chat/completions` (plain and SSE,
tool calls, JSON modes), `POST /v1/embeddings` (deterministic hashing vectors: shared words, higher
cosine) and `GET /v1/models`. Nothing here touches the internet.

Chat replies are queued (`reply`, `reply_error`, `reply_raw`) and rendered the way the request asks:
a streamed request gets SSE chunks, a plain one a chat.completion. What a real server refuses is a
switch (`json_schema=False` answers a json_schema response_format with DeepSeek's 400, and so on), and
like OpenAI's JSON mode it refuses `json_object` when no message says "json". Every request is recorded.

    with FakeOpenAI() as fake:                  # fake.url is the base URL, /v1 included
        fake.reply("答案[1]", total_tokens=42)
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from backend.testing.embeddings import HashingEmbedder
from backend.testing.fake_openai_wire import Message, completion, embeddings, error, stream


@dataclass(frozen=True)
class Raw:
    """A reply sent as it is (errors, malformed bodies), after `delay_s`."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0


@dataclass(frozen=True)
class Recorded:
    path: str
    body: Any
    headers: dict[str, str]


class FakeOpenAI:
    """The server and its script; a context manager that starts and stops it."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        model: str = "fake-chat",
        embedding_model: str = "fake-embed",
        embedding_dims: int = 64,
        json_schema: bool = True,
        json_object: bool = True,
        stream_options: bool = True,
        tools: bool = True,
    ) -> None:
        self.api_key, self.model = api_key, model
        self.embedding_model, self.embedding_dims = embedding_model, embedding_dims
        self.json_schema, self.json_object = json_schema, json_object
        self.stream_options, self.tools = stream_options, tools
        self.requests: list[Recorded] = []  # chat completions
        self.embedding_requests: list[Recorded] = []
        self.embedding_failures: deque[Raw] = deque()  # sent before any embedding succeeds
        self._replies: deque[Message | _Delayed | Raw] = deque()
        # Answers a chat request when nothing is queued (concurrent callers: reply by what they ask).
        self.script: Callable[[dict[str, Any]], Message | Raw] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # --- the script -------------------------------------------------------------------------------

    def reply(
        self,
        *pieces: str,
        total_tokens: int | None = None,
        delay_s: float = 0.0,
        finish_reason: str = "stop",
        then: tuple[str, ...] = (),
    ) -> None:
        """The model's next reply: text (streamed one piece per chunk); `then` are raw SSE data lines
        sent after the pieces (say, an error event)."""
        message = Message(tuple(pieces), (), total_tokens, finish_reason, then)
        self._queue(message, delay_s)

    def reply_tool_calls(self, *calls: tuple[str, dict[str, Any]], total_tokens: int | None = None) -> None:
        """The model asks to call functions (name, arguments) instead of answering."""
        self._queue(Message((), tuple(calls), total_tokens), 0.0)

    def reply_error(
        self, status: int, message: str, *, retry_after: str | None = None, delay_s: float = 0.0
    ) -> None:
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        body = json.dumps(error(message, kind="server_error" if status >= 500 else "invalid_request_error"))
        self._replies.append(Raw(status, body.encode(), headers=headers, delay_s=delay_s))

    def reply_raw(self, status: int, body: str, content_type: str = "application/json") -> None:
        """A reply sent verbatim (a malformed body, an HTML error page, ...)."""
        self._replies.append(Raw(status, body.encode(), content_type))

    def fail_embeddings(self, status: int, message: str, *, times: int = 1, delay_s: float = 0.0) -> None:
        body = json.dumps(error(message, kind="server_error" if status >= 500 else "invalid_request_error"))
        for _ in range(times):
            self.embedding_failures.append(Raw(status, body.encode(), delay_s=delay_s))

    def _queue(self, message: Message, delay_s: float) -> None:
        self._replies.append(message if not delay_s else _Delayed(message, delay_s))

    # --- serving ----------------------------------------------------------------------------------

    def __enter__(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.handle_error = lambda *args: None  # type: ignore[method-assign]  # clients that time out
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str, headers: dict[str, str], body: Any) -> Raw:
        """The response to one request (the handler sends it)."""
        if headers.get("Authorization") != f"Bearer {self.api_key}" and self.api_key:
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        route = path.split("?")[0]
        if route == "/v1/models":
            models = [
                {"id": m, "object": "model", "owned_by": "fake"} for m in (self.model, self.embedding_model)
            ]
            return _json(200, {"object": "list", "data": models})
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body of your request.")
        if route == "/v1/embeddings":
            return self._embed(body, headers)
        if route != "/v1/chat/completions":
            return _error(404, f"Unknown path {route}")
        with self._lock:
            self.requests.append(Recorded(route, body, headers))
        refusal = self._refusal(body)
        if refusal is not None:
            return refusal
        with self._lock:
            scripted = self._replies.popleft() if self._replies else None
        if scripted is None and self.script is not None:
            scripted = self.script(body)
        if scripted is None:
            return _error(500, "fake: no reply queued", kind="server_error")
        if isinstance(scripted, Raw):
            return scripted
        delay = scripted.delay_s if isinstance(scripted, _Delayed) else 0.0
        message = scripted.message if isinstance(scripted, _Delayed) else scripted
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Raw(
                200, stream(message, self.model, include_usage=usage), "text/event-stream", delay_s=delay
            )
        return replace(_json(200, completion(message, self.model)), delay_s=delay)

    def _refusal(self, body: dict[str, Any]) -> Raw | None:
        """What a server with fewer features answers (the messages real servers send)."""
        if body.get("model") != self.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "model_not_found")
        kind = (body.get("response_format") or {}).get("type")
        if kind == "json_schema" and not self.json_schema:
            return _error(400, "This response_format type is unavailable now")  # DeepSeek's words
        if kind == "json_object" and not self.json_object:
            return _error(400, "'response_format' of type 'json_object' is not supported with this model.")
        if (
            kind == "json_object"
            and "json" not in json.dumps(body.get("messages"), ensure_ascii=False).lower()
        ):
            return _error(
                400,
                "'messages' must contain the word 'json' in some form, to use 'response_format' of type "
                "'json_object'.",
            )
        if "stream_options" in body and not self.stream_options:
            return _error(400, "Unrecognized request argument supplied: stream_options")
        if "tools" in body and not self.tools:
            return _error(
                400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
            )
        return None

    def _embed(self, body: dict[str, Any], headers: dict[str, str]) -> Raw:
        with self._lock:
            self.embedding_requests.append(Recorded("/v1/embeddings", body, headers))
            failure = self.embedding_failures.popleft() if self.embedding_failures else None
        if failure is not None:
            return failure
        if body.get("model") != self.embedding_model:
            return _error(404, f"The model `{body.get('model')}` does not exist.", "model_not_found")
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if (
            not isinstance(texts, list)
            or not texts
            or not all(isinstance(t, str) and t.strip() for t in texts)
        ):
            return _error(400, "'input' must be a non-empty string or a list of non-empty strings")
        dims = body.get("dimensions")
        if dims is not None and dims != self.embedding_dims:
            return _error(400, f"This model does not support 'dimensions' other than {self.embedding_dims}.")
        vectors = HashingEmbedder(self.embedding_dims).embed_documents(texts)
        tokens = sum(len(t) for t in texts)
        return _json(
            200,
            embeddings([[round(float(x), 6) for x in row] for row in vectors], self.embedding_model, tokens),
        )


@dataclass(frozen=True)
class _Delayed:
    message: Message
    delay_s: float


def _json(status: int, value: Any) -> Raw:
    return Raw(status, json.dumps(value, ensure_ascii=False).encode())


def _error(status: int, message: str, code: str | None = None, *, kind: str = "invalid_request_error") -> Raw:
    return _json(status, error(message, kind=kind, code=code))


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send(fake.answer(self.path, dict(self.headers), None))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            self._send(fake.answer(self.path, dict(self.headers), body))

        def _send(self, reply: Raw) -> None:
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler
