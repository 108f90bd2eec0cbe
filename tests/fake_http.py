"""A tiny local HTTP server for provider tests: the network is never touched."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (path, headers, parsed JSON body or None for GET) -> (status, response bytes, content type)
Responder = Callable[[str, dict[str, str], Any], tuple[int, bytes, str]]


@contextmanager
def serve(respond: Responder, *, headers: dict[str, str] | None = None) -> Iterator[str]:
    """Serve GET and POST requests with `respond` on 127.0.0.1 (a free port); yields the base URL.

    `headers` go on every response, and OPTIONS (a browser's CORS preflight) is answered with them.
    A POST without a body reaches `respond` as None, like a GET.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_OPTIONS(self) -> None:
            self._send(204, b"", None)

        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer(json.loads(raw) if raw else None)

        def _answer(self, body: Any) -> None:
            status, data, content_type = respond(self.path, dict(self.headers), body)
            self._send(status, data, content_type)

        def _send(self, status: int, data: bytes, content_type: str | None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *args: None  # type: ignore[method-assign]  # clients that time out close early
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
