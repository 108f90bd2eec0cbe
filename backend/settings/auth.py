"""Sign-in and identity.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class AuthSettings(BaseModel):
    # --- auth ------------------------------------------------------------------------------------
    # none: every request acts as the documented local user (backend.auth.LOCAL_IDENTITY), through
    # the same row-level security as a signed-in user. supabase: a Supabase access token is required.
    auth_mode: Literal["none", "supabase"] = "none"
    supabase_url: str = Field(default="", description="Project URL, e.g. https://abcd.supabase.co.")
    supabase_anon_key: str = Field(
        default="",
        description="The project's public anon key. The chat page at / sends it to Supabase Auth to sign "
        "in; it is public by design (row-level security guards the data), never the service key.",
    )
    supabase_jwt_secret: SecretStr | None = Field(
        default=None, description="Legacy HS256 JWT secret; unset: only JWKS (ES256/RS256) tokens pass."
    )
    service_api_key: SecretStr | None = Field(
        default=None,
        description="Bearer key of the admin/service path (writes public documents); unset: no such path.",
    )
    pgrag_api_key: SecretStr | None = Field(
        default=None,
        description="Who `python -m backend mcp` (stdio) acts as: a personal API key (pgr_...) or an access "
        "token. Required with AUTH_MODE=supabase; unset with AUTH_MODE=none: the local user.",
    )
    auth_jwks_cache_ttl_s: float = Field(default=600.0, gt=0, description="How long fetched keys are used.")
    auth_jwks_min_refresh_s: float = Field(
        default=30.0, ge=0, description="Least time between two JWKS fetches (unknown kids force no more)."
    )
    auth_jwks_timeout_s: float = Field(default=5.0, gt=0)
    auth_leeway_s: float = Field(default=10.0, ge=0, le=300, description="Clock skew allowed on exp/nbf/iat.")
