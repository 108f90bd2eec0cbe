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
def serve(respond: Responder) -> Iterator[str]:
    """Serve GET and POST requests with `respond` on 127.0.0.1 (a free port); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            self._answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

        def _answer(self, body: Any) -> None:
            status, data, content_type = respond(self.path, dict(self.headers), body)
            self.send_response(status)
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
