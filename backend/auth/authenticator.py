"""From an Authorization header to an Identity, in the mode the settings choose (AUTH_MODE).

The API's dependency calls `authenticate(request.headers.get("authorization"))` in a worker thread
(it may fetch the signing keys) and passes the Identity to the services.
"""

from __future__ import annotations

import hmac
import logging
from typing import Protocol

from backend.auth.identity import LOCAL_IDENTITY, SERVICE_IDENTITY, Identity
from backend.auth.tokens import SupabaseTokenVerifier
from backend.config import Settings
from backend.errors import AuthUnavailable, MissingCredentials, Unauthorized

logger = logging.getLogger(__name__)


class Authenticator(Protocol):
    mode: str

    def authenticate(self, authorization: str | None) -> Identity:
        """The caller's identity; Unauthorized / AuthUnavailable when it cannot be established."""
        ...

    def prepare(self) -> None:
        """Start-up work (announce the mode, fetch the signing keys): call once, in a thread."""
        ...


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header value."""
    if authorization is None or not authorization.strip():
        raise MissingCredentials("sign-in required: send Authorization: Bearer <access token>")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <access token>'")
    return token.strip()


class _ServiceKey:
    """The admin/service path: a request bearing SERVICE_API_KEY acts as service_role."""

    def __init__(self, key: str | None) -> None:
        self._key = key.encode() if key else None

    def matches(self, token: str) -> bool:
        return self._key is not None and hmac.compare_digest(token.encode(), self._key)


class LocalAuthenticator:
    """AUTH_MODE=none: everyone is the local user (the service key, when set, still means the service)."""

    mode = "none"

    def __init__(self, service_key: str | None = None) -> None:
        self._service = _ServiceKey(service_key)

    def authenticate(self, authorization: str | None) -> Identity:
        if authorization and self._service.matches(authorization.strip().partition(" ")[2].strip()):
            return SERVICE_IDENTITY
        return LOCAL_IDENTITY

    def prepare(self) -> None:
        logger.warning(
            "AUTH_MODE=none: no sign-in; every request acts as the local user %s", LOCAL_IDENTITY.user_id
        )


class SupabaseAuthenticator:
    """AUTH_MODE=supabase: a valid Supabase access token, or the service key."""

    mode = "supabase"

    def __init__(self, verifier: SupabaseTokenVerifier, service_key: str | None = None) -> None:
        self.verifier = verifier
        self._service = _ServiceKey(service_key)

    def authenticate(self, authorization: str | None) -> Identity:
        token = bearer_token(authorization)
        if self._service.matches(token):
            return SERVICE_IDENTITY
        return self.verifier.verify(token)

    def prepare(self) -> None:
        """Fetch the signing keys at start-up; a failure is logged and retried when a token needs them."""
        try:
            self.verifier.jwks.prefetch()
        except AuthUnavailable as exc:  # start-up must not fail because Auth is briefly unreachable
            logger.warning("%s; will retry when a token needs them", exc)


def build_authenticator(settings: Settings) -> Authenticator:
    """The authenticator AUTH_MODE selects."""
    service_key = settings.service_api_key.get_secret_value() if settings.service_api_key else None
    if settings.auth_mode == "supabase":
        return SupabaseAuthenticator(SupabaseTokenVerifier.from_settings(settings), service_key)
    return LocalAuthenticator(service_key)
