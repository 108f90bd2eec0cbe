"""Who a request acts as: the verified user, the service (admin) path, or the local user of AUTH_MODE=none."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

DatabaseRole = Literal["authenticated", "service_role"]

# The one user of AUTH_MODE=none. Migration 013 gives it the conversations that existed before
# users did, so the demo's history survives; its documents are private like anyone's.
LOCAL_USER_ID = uuid.UUID("00000000-0000-0000-0000-000000000001")
# The cache scope of no user (migration 020): the public corpus's embeddings, written by the service
# path and the CLI, which every caller may read; and the service path's own web searches.
SHARED_SCOPE = uuid.UUID(int=0)


def cache_scope(user_id: uuid.UUID | None) -> uuid.UUID:
    """The scope a caller's cache entries live in: its user id, or SHARED_SCOPE for no user."""
    return SHARED_SCOPE if user_id is None else user_id


@dataclass(frozen=True)
class Identity:
    """A verified caller. `role` is the PostgreSQL role its transactions run as (RLS decides the rest).

    user_id is None only for the service identity, which owns nothing: what it writes is public.
    claims are what `request.jwt.claims` carries in the database, so auth.uid() / auth.jwt() work.
    """

    user_id: uuid.UUID | None
    role: DatabaseRole
    email: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.role == "authenticated" and self.user_id is None:
            raise ValueError("an authenticated identity needs a user id")
        object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))

    @property
    def cache_scope(self) -> uuid.UUID:
        """Where this caller's cache entries live: its own scope, never another user's."""
        return cache_scope(self.user_id)

    @property
    def is_service(self) -> bool:
        """True for the admin/service path (service_role): may write public documents."""
        return self.role == "service_role"

    def database_claims(self) -> dict[str, Any]:
        """The claims set as request.jwt.claims: the token's, with sub and role always present."""
        claims = dict(self.claims)
        claims["role"] = self.role
        if self.user_id is not None:
            claims["sub"] = str(self.user_id)
        else:
            claims.pop("sub", None)
        return claims


def user_identity(
    user_id: uuid.UUID, *, email: str | None = None, claims: Mapping[str, Any] | None = None
) -> Identity:
    """An end user (role authenticated)."""
    return Identity(user_id=user_id, role="authenticated", email=email, claims=claims or {})


LOCAL_IDENTITY = Identity(
    user_id=LOCAL_USER_ID,
    role="authenticated",
    claims={"sub": str(LOCAL_USER_ID), "role": "authenticated", "aud": "authenticated"},
)
SERVICE_IDENTITY = Identity(user_id=None, role="service_role", claims={"role": "service_role"})
