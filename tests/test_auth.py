"""Supabase access tokens: our own ES256/RS256 keys, a JWKS served from 127.0.0.1, every way to fail."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from pydantic import ValidationError

from backend.api.errors import install_error_handlers
from backend.auth import (
    LOCAL_IDENTITY,
    LOCAL_USER_ID,
    SERVICE_IDENTITY,
    JwksCache,
    LocalAuthenticator,
    SupabaseAuthenticator,
    SupabaseTokenVerifier,
    build_authenticator,
)
from backend.config import Settings
from backend.errors import AuthUnavailable, MissingCredentials, Unauthorized
from tests.fake_http import serve

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


@pytest.fixture(scope="module")
def rsa_key() -> SigningKey:
    return SigningKey("rsa-1", "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": ISSUER,
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


def mint(key: SigningKey, *, kid: str | None = None, **overrides: Any) -> str:
    headers = {"kid": kid if kid is not None else key.kid}
    return jwt.encode(claims(**overrides), key.private, algorithm=key.alg, headers=headers)


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


@pytest.fixture
def es_key() -> SigningKey:
    return es256("es-1")


@pytest.fixture
def auth_server(es_key, rsa_key) -> Iterator[tuple[FakeAuthServer, str]]:
    server = FakeAuthServer([es_key, rsa_key])
    with serve(server.respond) as url:
        yield server, url


def make_verifier(url: str, *, secret: str | None = None, min_refresh_s: float = 30.0, **kw: Any):
    jwks = JwksCache(
        f"{url}/auth/v1/.well-known/jwks.json",
        ttl_s=kw.pop("ttl_s", 600.0),
        min_refresh_s=min_refresh_s,
        timeout_s=2.0,
        **kw,
    )
    return SupabaseTokenVerifier(issuer=ISSUER, jwks=jwks, hs256_secret=secret, leeway_s=10.0)


@pytest.fixture
def verifier(auth_server):
    return make_verifier(auth_server[1])


# --- valid tokens -----------------------------------------------------------------------------------


def test_es256_and_rs256_tokens_give_the_user_identity(verifier, es_key, rsa_key):
    for key in (es_key, rsa_key):
        identity = verifier.verify(mint(key))
        assert identity.user_id == USER
        assert identity.role == "authenticated"
        assert identity.email == "a@example.com"
        assert identity.claims["session_id"] == "s1"
        assert not identity.is_service


def test_the_jwks_is_fetched_once_for_many_verifications_from_many_threads(auth_server, verifier, es_key):
    server, _ = auth_server
    tokens = [mint(es_key, sub=str(uuid.uuid4())) for _ in range(20)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for token in tokens * 5:
                verifier.verify(token)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert server.fetches == 1
    assert verifier.jwks.fetch_count == 1


def test_prefetch_at_start_up_means_no_fetch_during_requests(auth_server, verifier, es_key):
    server, _ = auth_server
    verifier.jwks.prefetch()
    assert server.fetches == 1
    verifier.verify(mint(es_key))
    assert server.fetches == 1


def test_expiry_within_the_leeway_is_accepted(verifier, es_key):
    assert verifier.verify(mint(es_key, exp=int(time.time()) - 5)).user_id == USER


# --- every way to fail ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"exp": int(time.time()) - 60}, "access token has expired"),
        ({"aud": "somebody-else"}, "audience is not 'authenticated'"),
        ({"iss": "https://evil.example/auth/v1"}, "not issued by this project's Supabase Auth"),
        ({"role": "anon"}, "role is 'anon', not 'authenticated'"),
        ({"role": "service_role"}, "role is 'service_role', not 'authenticated'"),
        ({"sub": None}, "lacks the 'sub' claim"),
        ({"exp": None}, "lacks the 'exp' claim"),
        ({"sub": "not-a-uuid"}, "subject (sub) is not a user id"),
        ({"nbf": int(time.time()) + 3600}, "not valid yet"),
    ],
)
def test_bad_claims_are_refused_with_a_message(verifier, es_key, overrides, message):
    with pytest.raises(Unauthorized, match=message.replace("(", r"\(").replace(")", r"\)")):
        verifier.verify(mint(es_key, **overrides))


def test_a_token_signed_by_another_key_with_a_known_kid_is_refused(verifier, es_key):
    forged = mint(es256("attacker"), kid=es_key.kid)
    with pytest.raises(Unauthorized, match="signature is invalid"):
        verifier.verify(forged)


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30"])
def test_malformed_tokens_are_refused(verifier, token):
    with pytest.raises(Unauthorized, match="malformed access token|no key id"):
        verifier.verify(token)


def test_alg_none_and_unconfigured_hs256_are_refused(verifier):
    unsigned = jwt.encode(claims(), cast(str, None), algorithm="none")  # PyJWT wants no key for "none"
    with pytest.raises(Unauthorized, match="accepted algorithms: ES256, RS256$"):
        verifier.verify(unsigned)
    hs = jwt.encode(claims(), HS_SECRET, algorithm="HS256")
    with pytest.raises(Unauthorized, match="signed with 'HS256'; accepted algorithms: ES256, RS256$"):
        verifier.verify(hs)


def test_hs256_is_accepted_only_with_the_configured_secret(auth_server):
    verifier = make_verifier(auth_server[1], secret=HS_SECRET)
    assert verifier.verify(jwt.encode(claims(), HS_SECRET, algorithm="HS256")).user_id == USER
    with pytest.raises(Unauthorized, match="signature is invalid"):
        verifier.verify(jwt.encode(claims(), "another-secret-of-at-least-32-characters!", algorithm="HS256"))
    with pytest.raises(Unauthorized, match="expired"):
        verifier.verify(jwt.encode(claims(exp=int(time.time()) - 60), HS_SECRET, algorithm="HS256"))
    assert auth_server[0].fetches == 0  # HS256 needs no keys


def test_a_header_alg_that_contradicts_the_key_is_refused(verifier, es_key, rsa_key):
    # An RS256 token claiming the EC key's kid: the key decides the algorithm, never the token.
    token = jwt.encode(claims(), rsa_key.private, algorithm="RS256", headers={"kid": es_key.kid})
    with pytest.raises(Unauthorized, match="says RS256; key 'es-1' is ES256"):
        verifier.verify(token)


# --- key rotation and the refresh rate limit ---------------------------------------------------------


def test_a_rotated_key_costs_exactly_one_refresh(auth_server, verifier, es_key):
    server, _ = auth_server
    verifier.verify(mint(es_key))
    rotated = es256("es-2")
    server.keys = [rotated]  # the project rotated: es-1 revoked, es-2 current
    assert verifier.verify(mint(rotated)).user_id == USER
    assert server.fetches == 2
    for _ in range(10):
        verifier.verify(mint(rotated))
    assert server.fetches == 2


def test_unknown_kids_cannot_make_the_server_fetch_per_request(auth_server, verifier, es_key):
    server, _ = auth_server
    verifier.verify(mint(es_key))
    for i in range(50):
        with pytest.raises(Unauthorized, match="unknown key"):
            verifier.verify(mint(es256(f"made-up-{i}")))
    assert server.fetches == 2  # the first unknown kid refreshed once; the next 49 waited their turn


def test_an_unknown_kid_is_looked_up_again_after_the_minimum_interval(auth_server, es_key):
    server, url = auth_server
    now = [1000.0]
    verifier = make_verifier(url, min_refresh_s=30.0, clock=lambda: now[0])
    verifier.verify(mint(es_key))
    late = es256("es-late")
    with pytest.raises(Unauthorized, match="unknown key"):
        verifier.verify(mint(late, kid="es-late"))  # refreshes once: not published yet
    server.keys = [es_key, late]
    now[0] += 10
    with pytest.raises(Unauthorized, match="unknown key"):
        verifier.verify(mint(late))  # too soon to ask again
    now[0] += 25
    assert verifier.verify(mint(late)).user_id == USER
    assert server.fetches == 3


def test_keys_are_fetched_again_after_the_ttl(auth_server, es_key):
    server, url = auth_server
    now = [0.0]
    verifier = make_verifier(url, ttl_s=600.0, clock=lambda: now[0])
    verifier.verify(mint(es_key))
    now[0] += 599
    verifier.verify(mint(es_key))
    assert server.fetches == 1
    now[0] += 2
    verifier.verify(mint(es_key))
    assert server.fetches == 2


def test_unreachable_jwks_is_a_503_type_error_not_the_users_fault(es_key):
    with serve(lambda *a: (500, b"oops", "text/plain")) as url:
        verifier = make_verifier(url)
        with pytest.raises(AuthUnavailable, match="sign-in keys are unreachable"):
            verifier.verify(mint(es_key))
        with pytest.raises(AuthUnavailable, match="could not fetch the signing keys"):
            verifier.jwks.prefetch()
    closed = make_verifier("http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(AuthUnavailable):
        closed.verify(mint(es_key))


def test_a_jwks_that_is_not_a_key_set_is_unavailable_not_unauthorized(es_key):
    with serve(lambda *a: (200, b'{"hello": 1}', "application/json")) as url:
        with pytest.raises(AuthUnavailable):
            make_verifier(url).verify(mint(es_key))


def test_known_keys_keep_working_while_a_refresh_after_the_ttl_fails(auth_server, es_key):
    server, url = auth_server
    now = [0.0]
    verifier = make_verifier(url, ttl_s=60.0, clock=lambda: now[0])
    verifier.verify(mint(es_key))
    server.status = 503
    now[0] += 120
    assert verifier.verify(mint(es_key)).user_id == USER  # stale key, refresh failed
    with pytest.raises(AuthUnavailable):
        verifier.verify(mint(es256("es-new")))  # cannot tell: the keys are unreachable


def test_symmetric_keys_published_in_a_jwks_are_ignored(es_key):
    secret = b"a-symmetric-secret-nobody-should-publish"
    oct_key = {"kty": "oct", "kid": "hs", "k": jwt.utils.base64url_encode(secret).decode(), "alg": "HS256"}
    body = json.dumps({"keys": [oct_key, es_key.jwk()]}).encode()
    with serve(lambda *a: (200, body, "application/json")) as url:
        verifier = make_verifier(url)
        assert verifier.verify(mint(es_key)).user_id == USER
        hs = jwt.encode(claims(), secret, algorithm="HS256", headers={"kid": "hs"})
        with pytest.raises(Unauthorized, match="accepted algorithms"):
            verifier.verify(hs)


# --- authenticators, settings, and the HTTP answer ---------------------------------------------------


def test_local_mode_is_the_documented_local_user_and_the_service_key_is_the_service():
    auth = LocalAuthenticator(SERVICE_KEY)
    assert auth.authenticate(None) == LOCAL_IDENTITY
    assert auth.authenticate("Bearer whatever") == LOCAL_IDENTITY
    assert LOCAL_IDENTITY.user_id == LOCAL_USER_ID == uuid.UUID("00000000-0000-0000-0000-000000000001")
    assert LOCAL_IDENTITY.role == "authenticated"
    assert auth.authenticate(f"Bearer {SERVICE_KEY}") == SERVICE_IDENTITY
    assert SERVICE_IDENTITY.is_service
    assert SERVICE_IDENTITY.user_id is None


def test_supabase_mode_needs_a_bearer_token_or_the_service_key(verifier, es_key):
    auth = SupabaseAuthenticator(verifier, SERVICE_KEY)
    with pytest.raises(MissingCredentials, match="sign-in required"):
        auth.authenticate(None)
    with pytest.raises(Unauthorized, match="must be 'Bearer <access token>'"):
        auth.authenticate("Basic dXNlcjpwYXNz")
    assert auth.authenticate(f"Bearer {mint(es_key)}").user_id == USER
    assert auth.authenticate(f"bearer {SERVICE_KEY}") == SERVICE_IDENTITY
    with pytest.raises(Unauthorized):
        auth.authenticate(f"Bearer {SERVICE_KEY[:-1]}x")


def test_settings_refuse_supabase_mode_without_its_url(monkeypatch):
    monkeypatch.setenv("AUTH_MODE", "supabase")
    with pytest.raises(ValidationError, match="AUTH_MODE=supabase needs SUPABASE_URL"):
        Settings(_env_file=None)
    monkeypatch.setenv("SUPABASE_URL", "abcd.supabase.co")
    with pytest.raises(ValidationError, match="SUPABASE_URL .* must be an http"):
        Settings(_env_file=None)
    monkeypatch.setenv("SUPABASE_URL", PROJECT + "/")
    settings = Settings(_env_file=None)
    assert settings.supabase_auth_url == ISSUER
    assert isinstance(build_authenticator(settings), SupabaseAuthenticator)
    monkeypatch.setenv("SERVICE_API_KEY", "short")
    with pytest.raises(ValidationError, match="SERVICE_API_KEY must be at least 32 characters"):
        Settings(_env_file=None)


def test_default_mode_is_none():
    settings = Settings(_env_file=None)
    assert settings.auth_mode == "none"
    assert isinstance(build_authenticator(settings), LocalAuthenticator)


@pytest.fixture
def app_client(verifier, auth_server) -> Iterator[TestClient]:
    """A bare app whose one route authenticates (the product's routes are wired separately)."""
    app = FastAPI()
    install_error_handlers(app)
    auth = SupabaseAuthenticator(verifier)

    @app.get("/whoami")
    def whoami(request: Request) -> dict[str, str]:
        return {"user_id": str(auth.authenticate(request.headers.get("authorization")).user_id)}

    with TestClient(app) as client:
        yield client


def test_401_answers_carry_an_rfc6750_challenge(app_client, es_key):
    missing = app_client.get("/whoami")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="pgrag"'
    assert missing.json()["error"] == "MissingCredentials"

    expired = app_client.get("/whoami", headers={"Authorization": f"Bearer {mint(es_key, exp=1)}"})
    assert expired.status_code == 401
    assert expired.json()["detail"] == "access token has expired: refresh the session and retry"
    assert expired.headers["www-authenticate"] == (
        'Bearer realm="pgrag", error="invalid_token", '
        'error_description="access token has expired: refresh the session and retry"'
    )
    ok = app_client.get("/whoami", headers={"Authorization": f"Bearer {mint(es_key)}"})
    assert ok.json() == {"user_id": str(USER)}


def test_unreachable_keys_answer_503_with_retry_after(es_key):
    app = FastAPI()
    install_error_handlers(app)
    with serve(lambda *a: (502, b"", "text/plain")) as url:
        auth = SupabaseAuthenticator(make_verifier(url))

        @app.get("/whoami")
        def whoami(request: Request) -> dict[str, str]:
            return {"user_id": str(auth.authenticate(request.headers.get("authorization")).user_id)}

        with TestClient(app) as client:
            response = client.get("/whoami", headers={"Authorization": f"Bearer {mint(es_key)}"})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert "www-authenticate" not in response.headers
