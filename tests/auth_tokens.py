"""Supabase-style access tokens for tests: our own signing keys, a JWKS served from 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

PROJECT = "https://abcd.supabase.co"
ISSUER = f"{PROJECT}/auth/v1"
HS_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long"
SERVICE_KEY = "s" * 40
USER = uuid.UUID("8d2f7c1e-1b5a-4c3e-9f10-2a6b7c8d9e0f")


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Any
    extra_fields: dict[str, Any] = field(default_factory=dict)

    def jwk(self) -> dict[str, Any]:
        algorithm = ECAlgorithm if self.alg == "ES256" else RSAAlgorithm
        public = algorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "alg": self.alg, "use": "sig", **self.extra_fields}


def es256(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def claims(*, issuer: str = ISSUER, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": issuer,
        "aud": "authenticated",
        "sub": str(USER),
        "role": "authenticated",
        "email": "a@example.com",
        "iat": now,
        "exp": now + 3600,
        "session_id": "s1",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def mint(key: SigningKey, *, kid: str | None = None, issuer: str = ISSUER, **overrides: Any) -> str:
    headers = {"kid": kid if kid is not None else key.kid}
    return jwt.encode(claims(issuer=issuer, **overrides), key.private, algorithm=key.alg, headers=headers)


class FakeAuthServer:
    """GET /auth/v1/.well-known/jwks.json with the keys it currently publishes; counts the fetches."""

    def __init__(self, keys: list[SigningKey]) -> None:
        self.keys = keys
        self.status = 200
        self.fetches = 0
        self.lock = threading.Lock()

    def respond(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        with self.lock:
            self.fetches += 1
        if path != "/auth/v1/.well-known/jwks.json":
            return 404, b"{}", "application/json"
        return self.status, json.dumps({"keys": [k.jwk() for k in self.keys]}).encode(), "application/json"
