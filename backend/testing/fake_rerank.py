"""A fake rerank API on 127.0.0.1 for tests and the demo: Jina's `POST /v1/rerank` and Cohere's
`POST /v2/rerank`, scoring each document by the share of the query's character bigrams (CJK) and words
(Latin) it contains - a deterministic stand-in for a cross-encoder. Nothing here touches the internet.

Behaviours (`server.behaviour = RerankBehaviour(...)`): latency, an HTTP status instead of results, a
malformed body, a hang longer than any client timeout, inverted scores (a model that disagrees).
Every request is recorded.

    python -m backend.testing.fake_rerank --port 8202
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_WORDS = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class RerankBehaviour:
    latency_ms: int = 0
    status: int | None = None
    malformed: bool = False
    hang_s: float = 0.0
    invert: bool = False  # score 1 - relevance: a model that disagrees with the heuristic order


@dataclass
class RecordedRerank:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


def relevance(query: str, document: str) -> float:
    """The share of the query's bigrams/words found in the document, squashed into (0, 1)."""
    q, d = query.lower(), document.lower()
    units = {run[i : i + 2] for run in _CJK_RUN.findall(q) for i in range(max(1, len(run) - 1))}
    units |= {w for w in _WORDS.findall(q) if len(w) > 1}
    if not units:
        return 0.01
    share = sum(1 for u in units if u in d) / len(units)
    return round(0.01 + 0.98 * share, 6)


@dataclass
class _State:
    behaviour: RerankBehaviour = field(default_factory=RerankBehaviour)
    requests: list[RecordedRerank] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeRerankServer:
    """The fake rerank API. Use as a context manager (tests) or call serve_forever() (the demo)."""

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1", api_key: str | None = "fake-rerank-key"):
        self.api_key = api_key
        self._state = _State()
        self._server = ThreadingHTTPServer((host, port), _handler(self, self._state))
        self._server.daemon_threads = True
        self._server.handle_error = lambda *args: None  # type: ignore[method-assign]  # clients time out
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def behaviour(self) -> RerankBehaviour:
        return self._state.behaviour

    @behaviour.setter
    def behaviour(self, value: RerankBehaviour) -> None:
        self._state.behaviour = value

    @property
    def requests(self) -> list[RecordedRerank]:
        with self._state.lock:
            return list(self._state.requests)

    def __enter__(self) -> FakeRerankServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.02)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) for one request; a hang or latency is applied by the handler."""
        if path not in ("/v1/rerank", "/v2/rerank"):
            return 404, {"detail": f"no route {path}"}
        if self.api_key and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"detail": "invalid api key"}
        b = self.behaviour
        if b.status is not None:
            return b.status, {"detail": f"fake failure {b.status}"}
        documents = body.get("documents")
        query = body.get("query")
        if not isinstance(documents, list) or not isinstance(query, str):
            return 400, {"detail": "query and documents are required"}
        if b.malformed:
            return 200, {"results": [{"index": len(documents) + 5, "relevance_score": "high"}]}
        scores = [(i, relevance(query, str(d))) for i, d in enumerate(documents)]
        if b.invert:
            scores = [(i, round(1.0 - score, 6)) for i, score in scores]
        scores.sort(key=lambda s: -s[1])
        top_n = body.get("top_n") or len(scores)
        results = [{"index": i, "relevance_score": score} for i, score in scores[:top_n]]
        usage = {"total_tokens": sum(len(str(d)) for d in documents)}
        return 200, {"model": body.get("model"), "results": results, "usage": usage}


def _handler(server: FakeRerankServer, state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            headers = {k.lower(): v for k, v in self.headers.items()}
            with state.lock:
                state.requests.append(RecordedRerank(self.path, body, headers))
            b = state.behaviour
            if b.hang_s:
                time.sleep(b.hang_s)
            if b.latency_ms:
                time.sleep(b.latency_ms / 1000)
            status, payload = server.answer(self.path, headers, body if isinstance(body, dict) else {})
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="A fake Jina/Cohere rerank API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8202)
    parser.add_argument("--api-key", default="fake-rerank-key")
    args = parser.parse_args()
    server = FakeRerankServer(port=args.port, api_key=args.api_key or None)
    print(f"fake rerank API on {server.base_url} (POST /v1/rerank, /v2/rerank), key {args.api_key!r}")
    server.serve_forever()


if __name__ == "__main__":
    main()
