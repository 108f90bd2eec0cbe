"""Verification of Supabase access tokens (PyJWT): signature, issuer, audience, expiry, role.

Synchronous and thread-safe: the API calls `verify` from its threadpool, never on the event loop.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import jwt

from backend.auth.identity import Identity, user_identity
from backend.auth.jwks import ASYMMETRIC_ALGORITHMS, JwksCache, shown
from backend.config import Settings
from backend.errors import Unauthorized

logger = logging.getLogger(__name__)

AUDIENCE = "authenticated"
# Supabase access tokens always carry these; a token without one of them is not a user session.
REQUIRED_CLAIMS = ["exp", "iss", "aud", "sub", "role"]


class SupabaseTokenVerifier:
    """Checks one project's access tokens and turns a valid one into an Identity."""

    def __init__(
        self, *, issuer: str, jwks: JwksCache, hs256_secret: str | None = None, leeway_s: float = 10.0
    ):
        self.issuer = issuer
        self.jwks = jwks
        self.hs256_secret = hs256_secret
        self.leeway_s = leeway_s

    @classmethod
    def from_settings(cls, settings: Settings) -> SupabaseTokenVerifier:
        issuer = settings.supabase_auth_url
        jwks = JwksCache(
            f"{issuer}/.well-known/jwks.json",
            ttl_s=settings.auth_jwks_cache_ttl_s,
            min_refresh_s=settings.auth_jwks_min_refresh_s,
            timeout_s=settings.auth_jwks_timeout_s,
        )
        secret = settings.supabase_jwt_secret.get_secret_value() if settings.supabase_jwt_secret else None
        return cls(issuer=issuer, jwks=jwks, hs256_secret=secret, leeway_s=settings.auth_leeway_s)

    def verify(self, token: str) -> Identity:
        """The identity a valid user token proves; Unauthorized (or AuthUnavailable) otherwise."""
        algorithm, key = self._key_for(token)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=AUDIENCE,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(_describe(exc, self.issuer)) from None
        return _identity(claims)

    def _key_for(self, token: str) -> tuple[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"malformed access token: {exc}") from None
        algorithm = header.get("alg")
        if algorithm in ASYMMETRIC_ALGORITHMS:
            kid = header.get("kid")
            if not isinstance(kid, str) or not kid:
                raise Unauthorized("access token has no key id (kid) in its header")
            key = self.jwks.key(kid)
            if key.algorithm_name != algorithm:
                raise Unauthorized(f"access token says {algorithm}; key {shown(kid)} is {key.algorithm_name}")
            return algorithm, key
        if algorithm == "HS256" and self.hs256_secret:
            return algorithm, self.hs256_secret
        accepted = "ES256, RS256" + (", HS256" if self.hs256_secret else "")
        raise Unauthorized(f"access token signed with {shown(algorithm)}; accepted algorithms: {accepted}")


def _identity(claims: dict[str, Any]) -> Identity:
    role = claims.get("role")
    if role != "authenticated":
        raise Unauthorized(f"access token role is {shown(role)}, not 'authenticated': sign in as a user")
    try:
        user_id = uuid.UUID(str(claims["sub"]))
    except ValueError:
        raise Unauthorized("access token subject (sub) is not a user id") from None
    email = claims.get("email")
    return user_identity(user_id, email=email if isinstance(email, str) and email else None, claims=claims)


def _describe(exc: jwt.PyJWTError, issuer: str) -> str:
    """A message a client developer can act on; no token contents are echoed."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "access token has expired: refresh the session and retry"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "access token is not valid yet (nbf/iat in the future): check the clock"
    if isinstance(exc, jwt.InvalidAudienceError):
        return f"access token audience is not {AUDIENCE!r}"
    if isinstance(exc, jwt.InvalidIssuerError):
        return f"access token was not issued by this project's Supabase Auth ({issuer})"
    if isinstance(exc, jwt.InvalidSignatureError):
        return "access token signature is invalid"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"access token lacks the {shown(exc.claim)} claim"
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return "access token algorithm does not match its key"
    if isinstance(exc, jwt.DecodeError):
        return f"malformed access token: {exc}"
    return f"invalid access token: {exc}"
