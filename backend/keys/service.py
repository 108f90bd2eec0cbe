"""Personal API keys (issue 28): what a signed-in user creates for the clients that cannot sign in.

A key is `pgr_` + 43 url-safe characters (256 random bits), shown once when it is created; the
database keeps its sha256 (migration 021). A request bearing a key acts as the key's owner - role
authenticated, auth.uid() the owner - so row-level security decides what it sees as it does for the
owner's own session; `api_key_id` in the claims tells the two apart (auth.jwt() ->> 'api_key_id' in
SQL). Revoking deletes the row: the next request with the key is a 401, nothing caches a key.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime, timedelta

from backend.auth.authenticator import Authenticator
from backend.auth.identity import Identity, user_identity
from backend.db.database import Database
from backend.db.repositories import api_keys as repo
from backend.errors import Forbidden, InvalidInput, NotFound, Unauthorized

KEY_PREFIX = "pgr_"
SHOWN_PREFIX_LENGTH = 12  # what lists show: "pgr_" and 8 characters of the secret
MAX_KEYS_PER_USER = 50
MAX_LIFETIME_DAYS = 3650


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


class ApiKeys:
    """Create, list and revoke the caller's keys (each statement under the caller's identity)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self, identity: Identity, *, name: str, expires_in_days: int | None
    ) -> tuple[str, repo.ApiKeyRow]:
        """(the key, its row). The key is returned here only: the database keeps its hash."""
        _require_own_session(identity, "create")
        if expires_in_days is not None and not 1 <= expires_in_days <= MAX_LIFETIME_DAYS:
            raise InvalidInput(
                f"expires_in_days must be between 1 and {MAX_LIFETIME_DAYS} (or omitted: no expiry)"
            )
        expires_at = datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days else None
        key = new_key()
        with self._db.as_user(identity) as conn:
            if repo.count_keys(conn) >= MAX_KEYS_PER_USER:
                raise InvalidInput(f"at most {MAX_KEYS_PER_USER} API keys per user: revoke one first")
            row = repo.insert_key(
                conn,
                name=name,
                prefix=key[:SHOWN_PREFIX_LENGTH],
                key_hash=key_hash(key),
                expires_at=expires_at,
            )
        return key, row

    def list(self, identity: Identity) -> list[repo.ApiKeyRow]:
        _require_user(identity)
        with self._db.as_user(identity, read_only=True) as conn:
            return repo.list_keys(conn)

    def revoke(self, identity: Identity, key_id: uuid.UUID) -> None:
        _require_user(identity)
        with self._db.as_user(identity) as conn:
            if not repo.delete_key(conn, key_id):
                raise NotFound(f"API key {key_id} not found")


def _require_user(identity: Identity) -> None:
    if identity.user_id is None:
        raise Forbidden("the service key has no API keys: API keys belong to signed-in users")


def _require_own_session(identity: Identity, action: str) -> None:
    _require_user(identity)
    if "api_key_id" in identity.claims:
        raise Forbidden(f"{action} API keys from a signed-in session, not with an API key")


class ApiKeyAuthenticator:
    """Accepts a personal API key as `Authorization: Bearer pgr_…`; any other credential goes to `inner`."""

    def __init__(self, inner: Authenticator, db: Database) -> None:
        self._inner, self._db = inner, db
        self.mode = inner.mode

    def authenticate(self, authorization: str | None) -> Identity:
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not looks_like_key(token):
            return self._inner.authenticate(authorization)
        with self._db.owner() as conn:
            found = repo.key_owner(conn, key_hash(token))
        if found is None:
            raise Unauthorized("the API key is unknown, revoked or expired")
        owner_id, key_id = found
        return user_identity(
            owner_id,
            claims={
                "sub": str(owner_id),
                "role": "authenticated",
                "aud": "authenticated",
                "api_key_id": str(key_id),
            },
        )

    def prepare(self) -> None:
        self._inner.prepare()
