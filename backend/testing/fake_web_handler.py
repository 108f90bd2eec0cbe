"""The fake web's request handler (the server and its behaviours: backend/testing/fake_web.py)."""

from __future__ import annotations

import json
import select
import socket
import time
import uuid
import zlib
from functools import lru_cache
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from backend.testing.fake_engines_handler import EngineRoutes
from backend.testing.fake_web_state import Behaviour, RecordedRequest, State, clean_query

TAVILY_MAX_QUERY_CHARS = 400
_ARTICLE = "<p>A plain page served by the fake web for reader tests. It has one paragraph of text.</p>"


@lru_cache(maxsize=4)
def compressed_page(encoding: str, mib: int) -> bytes:
    """An HTML page of `mib` MiB of repeated paragraphs, gzip- or deflate-compressed (~1000:1: a
    "compression bomb" of a few hundred kB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    paragraph = b"<p>" + b"bomb text " * 100 + b"</p>\n"
    block = paragraph * (1024 * 1024 // len(paragraph) + 1)
    parts = [packer.compress(b"<html><body>")]
    parts += [packer.compress(block[: 1024 * 1024]) for _ in range(mib)]
    return b"".join([*parts, packer.flush()])


class SearchBackend(Protocol):
    """What the handler asks of the fake server."""

    api_key: str | None

    def results_for(
        self,
        query: str,
        max_results: int,
        raw: bool,
        include: list[str],
        exclude: list[str],
        *,
        engine: str | None = None,
    ) -> list[dict[str, Any]]: ...

    def vary(self, results: list[dict[str, Any]], behaviour: Behaviour) -> list[dict[str, Any]]: ...


def make_handler(server: SearchBackend, state: State) -> type[BaseHTTPRequestHandler]:
    """The handler class of one fake server (http.server makes one instance per request)."""
    return type("Handler", (FakeWebHandler,), {"fake": server, "state": state})


class FakeWebHandler(EngineRoutes, BaseHTTPRequestHandler):
    """Tavily's and SearXNG's search APIs and a few kinds of page; make_handler binds it to one self.fake."""

    fake: SearchBackend
    state: State

    def log_message(self, *args: object) -> None:
        pass

    # --- search APIs ---------------------------------------------------------------------------
    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = None
        query = body.get("query") if isinstance(body, dict) else None
        if isinstance(body, dict) and "q" in body and "query" not in body:
            query = body.get("q")  # Serper's field
        self._record("POST", path, query if isinstance(query, str) else None)
        if path == "/v1/web-search":
            return self.bocha(body)
        if path == "/search" and self.headers.get("X-API-KEY") is not None:
            return self.serper(body)
        if path != "/search":
            return self._json(404, {"detail": {"error": "Not Found"}})
        if not isinstance(body, dict):
            return self._json(400, {"detail": {"error": "Body must be a JSON object."}})
        if self.fake.api_key and self.fake.api_key not in (self._bearer(), body.get("api_key")):
            return self._json(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
        if not isinstance(query, str) or not query.strip():
            return self._json(400, {"detail": {"error": "Query is missing."}})
        if len(query) > TAVILY_MAX_QUERY_CHARS:
            return self._json(400, {"detail": {"error": "Query is too long. Max query length is 400."}})
        max_results = max(0, min(20, int(body.get("max_results") or 5)))
        raw = bool(body.get("include_raw_content"))
        include, exclude = body.get("include_domains") or [], body.get("exclude_domains") or []
        self._search(query, max_results, raw, include, exclude, tavily=True)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        params = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self._record(
            "GET",
            parts.path,
            params.get("q") or params.get("query") or params.get("term") or params.get("lemma_title"),
        )
        if self.engine_get(parts.path, params):
            return None
        if parts.path == "/search":
            if params.get("format") != "json":
                return self._send(403, b"format not allowed", "text/plain")
            return self._search(params.get("q", ""), 10, False, [], [], tavily=False)
        self._page(parts.path, params)

    def _gate(self, query: str) -> bool:
        """The behaviours every search API shares (latency, hangs, failures, malformed bodies): True
        when the caller should answer with results, False when the request is already answered (or
        the client is gone)."""
        behaviour = self.state.behaviour.with_keywords(query)
        with self.state.lock:
            self.state.in_flight += 1
            self.state.max_in_flight = max(self.state.max_in_flight, self.state.in_flight)
        try:
            answered = self._pause(behaviour.latency_ms / 1000 + behaviour.hang_s)
        finally:
            with self.state.lock:
                self.state.in_flight -= 1
        if not answered:
            return False  # the client hung up (or the server stops): nobody to answer
        if behaviour.status and self._should_fail(query, behaviour):
            headers = {"Retry-After": behaviour.retry_after} if behaviour.retry_after else {}
            self._json(behaviour.status, {"detail": {"error": f"fake {behaviour.status}"}}, headers)
            return False
        if behaviour.malformed:
            self._send(200, b"<html>upstream proxy error</html>", "application/json")
            return False
        return True

    def _found(
        self,
        query: str,
        max_results: int,
        raw: bool,
        include: list[str],
        exclude: list[str],
        engine: str | None = None,
    ) -> list[dict[str, Any]]:
        behaviour = self.state.behaviour.with_keywords(query)
        if behaviour.empty:
            return []
        found = self.fake.results_for(query, max_results, raw, include, exclude, engine=engine)
        return self.fake.vary(found, behaviour)

    def _search(
        self,
        query: str,
        max_results: int,
        raw: bool,
        include: list[str],
        exclude: list[str],
        *,
        tavily: bool,
    ) -> None:
        started = time.perf_counter()
        if not self._gate(query):
            return
        results = self._found(query, max_results, raw, include, exclude, "tavily" if tavily else "searxng")
        if tavily:
            payload: dict[str, Any] = {
                "query": query,
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": results,
                "response_time": round(time.perf_counter() - started, 3),
                "request_id": str(uuid.uuid4()),
            }
        else:
            payload = {
                "query": query,
                "number_of_results": len(results),
                "results": [_searx(r) for r in results],
                "answers": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        self._json(200, payload)

    def _should_fail(self, query: str, behaviour: Behaviour) -> bool:
        if behaviour.fail_times is None:
            return True
        key = clean_query(query).casefold()
        with self.state.lock:
            done = self.state.failures.get(key, 0)
            if done >= behaviour.fail_times:
                return False
            self.state.failures[key] = done + 1
            return True

    # --- pages -----------------------------------------------------------------------------------
    def _page(self, path: str, params: dict[str, str]) -> None:
        if path in self.state.pages:
            return self._send(200, self.state.pages[path][1].encode(), "text/html; charset=utf-8")
        if path == "/redirect":
            self.send_response(int(params.get("code", "302")))
            self.send_header("Location", params.get("to", "/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if path == "/slow":
            if self._pause(float(params.get("ms", "3000")) / 1000):
                self._send(200, f"<html><body>{_ARTICLE}</body></html>".encode(), "text/html")
            return None
        if path == "/big":
            kb = int(params.get("kb", "2048"))
            return self._send(200, b"<html><body>" + b"<p>filler text </p>" * (kb * 1024 // 19), "text/html")
        if path == "/compressed":  # ?encoding=gzip|deflate|br&mib=N: Content-Encoding as named
            encoding = params.get("encoding", "gzip")
            mib = int(params.get("mib", "1"))
            data = compressed_page(encoding, mib) if encoding != "br" else bytes(range(256)) * 16
            return self._send(200, data, "text/html; charset=utf-8", {"Content-Encoding": encoding})
        if path == "/gbk":
            html = "<html><head><title>编码测试</title></head><body><p>国标码网页。</p></body></html>"
            return self._send(200, html.encode("gbk"), "text/html; charset=gbk")
        if path == "/binary":
            return self._send(200, bytes(range(256)) * 64, "application/octet-stream")
        if path == "/text":
            return self._send(200, b"Plain text page.\nSecond line.", "text/plain; charset=utf-8")
        if path.startswith("/status/"):
            return self._send(int(path.rsplit("/", 1)[1]), b"<html><body>error</body></html>", "text/html")
        return self._send(404, b"<html><body>not found</body></html>", "text/html")

    # --- plumbing --------------------------------------------------------------------------------
    def _pause(self, seconds: float) -> bool:
        """Sleep, watching the socket: False as soon as the client hangs up (counted) or we stop."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.state.stopping.is_set():
                return False
            if self._client_gone():
                with self.state.lock:
                    self.state.disconnects += 1
                return False
            time.sleep(min(0.01, left))
        return True

    def _client_gone(self) -> bool:
        # The request is read in full, so the socket turns readable only when the client closes it.
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except OSError:
            return True

    def _bearer(self) -> str | None:
        value = self.headers.get("Authorization", "")
        return value.removeprefix("Bearer ").strip() if value.startswith("Bearer ") else None

    def _record(self, method: str, path: str, query: str | None) -> None:
        with self.state.lock:
            self.state.requests.append(RecordedRequest(method, path, query, dict(self.headers), time.time()))

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        # backslashreplace writes a lone surrogate as its JSON escape (\ud800), as a real API would.
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")
        self._send(status, data, "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _searx(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "url": result["url"],
        "title": result["title"],
        "content": result["content"],
        "engine": "fake",
        "engines": ["fake"],
        "score": result["score"],
        "category": "general",
        "publishedDate": result.get("published_date"),
    }
