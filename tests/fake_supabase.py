"""A fake Supabase Auth on 127.0.0.1 for the browser's sign-in: password and refresh-token grants,
logout, and the JWKS the backend verifies the tokens with. It answers CORS like the real one, since
the page calls it from the API's origin."""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.auth_tokens import es256, mint

ANON_KEY = "anon-key-for-tests"
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "apikey, authorization, content-type, x-client-info",
}


class FakeSupabaseAuth:
    def __init__(self, users: dict[str, str]) -> None:
        self.users = users  # email -> password
        self.ids = {email: uuid.uuid4() for email in users}
        self.key = es256("page-test-key")
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> email
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path, headers)
        self.base_url = ""
        self._lock = threading.Lock()

    def respond(
        self, method: str, path: str, headers: dict[str, str], body: Any
    ) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append((method, path, headers))
        url = urlsplit(path)
        if method == "GET" and url.path == "/auth/v1/.well-known/jwks.json":
            return 200, {"keys": [self.key.jwk()]}
        if headers.get("apikey") != ANON_KEY:
            return 401, {"message": "Invalid API key"}
        if method == "POST" and url.path == "/auth/v1/token":
            grant = parse_qs(url.query).get("grant_type", [""])[0]
            return self._token(grant, body or {})
        if method == "POST" and url.path == "/auth/v1/logout":
            return 204, {}
        return 404, {"message": "not found"}

    def _token(self, grant: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if grant == "password":
            email = body.get("email", "")
            if self.users.get(email) != body.get("password"):
                return 400, {"error": "invalid_grant", "error_description": "Invalid login credentials"}
        elif grant == "refresh_token":
            email = self.refresh_tokens.pop(body.get("refresh_token", ""), "")
            if not email:
                return 400, {"error": "invalid_grant", "error_description": "Invalid Refresh Token"}
        else:
            return 400, {"error": "unsupported_grant_type"}
        refresh = secrets.token_urlsafe(16)
        self.refresh_tokens[refresh] = email
        user_id = self.ids[email]
        token = mint(self.key, issuer=f"{self.base_url}/auth/v1", sub=str(user_id), email=email)
        return 200, {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": 3600,
            "expires_at": int(time.time()) + 3600,
            "refresh_token": refresh,
            "user": {"id": str(user_id), "email": email, "aud": "authenticated", "role": "authenticated"},
        }


@contextmanager
def running_fake_supabase(users: dict[str, str]) -> Iterator[FakeSupabaseAuth]:
    fake = FakeSupabaseAuth(users)

    class Handler(BaseHTTPRequestHandler):
        def do_OPTIONS(self) -> None:  # the browser's CORS preflight
            self._send(204, b"")

        def do_GET(self) -> None:
            self._answer("GET", None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            self._answer("POST", json.loads(raw) if raw else None)

        def _answer(self, method: str, body: Any) -> None:
            status, payload = fake.respond(
                method, self.path, {k.lower(): v for k, v in self.headers.items()}, body
            )
            self._send(status, b"" if status == 204 else json.dumps(payload).encode())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            for name, value in CORS.items():
                self.send_header(name, value)
            if data:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.base_url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
