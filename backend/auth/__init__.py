"""Authentication: Supabase access tokens (or AUTH_MODE=none's local user) -> an Identity.

What the API wires (see each module): `build_authenticator(settings)` once at start-up, its
`prepare()` in a thread, then per request `authenticate(authorization_header)` in the threadpool;
the Identity goes to `backend.db.identity.user_transaction(pool, identity)`.
"""

from backend.auth.authenticator import (
    Authenticator,
    LocalAuthenticator,
    SupabaseAuthenticator,
    bearer_token,
    build_authenticator,
)
from backend.auth.identity import (
    LOCAL_IDENTITY,
    LOCAL_USER_ID,
    SERVICE_IDENTITY,
    SHARED_SCOPE,
    DatabaseRole,
    Identity,
    cache_scope,
    user_identity,
)
from backend.auth.jwks import JwksCache
from backend.auth.tokens import SupabaseTokenVerifier

__all__ = [
    "LOCAL_IDENTITY",
    "LOCAL_USER_ID",
    "SERVICE_IDENTITY",
    "SHARED_SCOPE",
    "Authenticator",
    "DatabaseRole",
    "Identity",
    "JwksCache",
    "LocalAuthenticator",
    "SupabaseAuthenticator",
    "SupabaseTokenVerifier",
    "bearer_token",
    "build_authenticator",
    "cache_scope",
    "user_identity",
]
