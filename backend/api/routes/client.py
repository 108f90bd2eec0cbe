"""GET /client-config: what the chat page (or any browser client) needs to know before its first call."""

from __future__ import annotations

from fastapi import APIRouter, Request

from backend import __version__
from backend.api.deps import ServicesDep
from backend.api.schemas import ClientConfigOut, ClientFeaturesOut

router = APIRouter(tags=["client"])


@router.get(
    "/client-config",
    response_model=ClientConfigOut,
    summary="Auth mode, where to sign in (Supabase URL + public anon key), optional features; no secrets",
)
def client_config(request: Request, services: ServicesDep) -> ClientConfigOut:
    s = services.settings
    supabase = s.auth_mode == "supabase"
    return ClientConfigOut(
        version=__version__,
        auth_mode=s.auth_mode,
        supabase_url=s.supabase_url.strip().rstrip("/") if supabase else None,
        supabase_anon_key=(s.supabase_anon_key.strip() or None) if supabase else None,
        max_message_chars=s.max_query_chars,
        features=ClientFeaturesOut(
            research=_serves(request, "POST", "/research"),
            web=s.resolved_web_search_provider != "none",
        ),
    )


def _serves(request: Request, method: str, path: str) -> bool:
    """Whether this app documents the route: optional endpoints are discovered, not configured twice.
    (The OpenAPI document, not app.routes: included routers may be nested there.)"""
    operations = request.app.openapi().get("paths", {}).get(path, {})
    return method.lower() in operations
