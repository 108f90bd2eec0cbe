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
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.auth_tokens import es256, mint
from tests.fake_http import serve

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
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, lower-cased headers)
        self.base_url = ""
        self._lock = threading.Lock()

    def respond(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        """tests/fake_http.py's Responder: (status, JSON bytes, content type)."""
        with self._lock:
            self.requests.append((path, {k.lower(): v for k, v in headers.items()}))
        status, payload = self._route(path, {k.lower(): v for k, v in headers.items()}, body)
        return status, b"" if status == 204 else json.dumps(payload).encode(), "application/json"

    def _route(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, Any]]:
        url = urlsplit(path)
        if url.path == "/auth/v1/.well-known/jwks.json":
            return 200, {"keys": [self.key.jwk()]}
        if headers.get("apikey") != ANON_KEY:
            return 401, {"message": "Invalid API key"}
        if url.path == "/auth/v1/token":
            grant = parse_qs(url.query).get("grant_type", [""])[0]
            return self._token(grant, body or {})
        if url.path == "/auth/v1/logout":
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
    with serve(fake.respond, headers=CORS) as url:
        fake.base_url = url
        yield fake
