"""POST/GET/DELETE /api-keys: personal API keys for clients that cannot sign in (issue 28)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from fastapi import APIRouter, Response

from backend.api.api_key_schemas import ApiKeyCreatedOut, ApiKeyIn, ApiKeyOut
from backend.api.deps import CurrentUser, ServicesDep

router = APIRouter(prefix="/api-keys", tags=["api keys"])


@router.post(
    "",
    status_code=201,
    response_model=ApiKeyCreatedOut,
    summary="Create a personal API key (shown once) that acts as you",
    description="Send it as `Authorization: Bearer <key>` to any route. It sees what you see (row-level "
    "security applies as for your session). Create keys from a signed-in session, not with a key.",
)
def create_key(body: ApiKeyIn, services: ServicesDep, user: CurrentUser) -> dict[str, Any]:
    key, row = services.api_keys.create(user, name=body.name, expires_in_days=body.expires_in_days)
    return {**dataclasses.asdict(row), "key": key}


@router.get("", response_model=list[ApiKeyOut], summary="Your API keys, newest first (never the keys)")
def list_keys(services: ServicesDep, user: CurrentUser) -> list[dict[str, Any]]:
    return [dataclasses.asdict(row) for row in services.api_keys.list(user)]


@router.delete(
    "/{key_id}", status_code=204, summary="Revoke a key: the next request with it is refused (401)"
)
def revoke_key(key_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> Response:
    services.api_keys.revoke(user, key_id)
    return Response(status_code=204)
