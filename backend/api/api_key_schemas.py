"""The /api-keys request and response bodies."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ApiKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "Open WebUI"}]})

    name: str = Field(min_length=1, max_length=100, description="what the key is for, shown in the list")
    expires_in_days: int | None = Field(
        default=None, ge=1, le=3650, description="the key stops working after this many days; omitted: never"
    )


class ApiKeyOut(BaseModel):
    id: uuid.UUID
    name: str
    prefix: str = Field(description="the key's first 12 characters, to tell keys apart")
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None = Field(description="the last request that used it (to the minute)")


class ApiKeyCreatedOut(ApiKeyOut):
    key: str = Field(
        description="the key itself: send it as `Authorization: Bearer <key>`. Shown this once; only its "
        "hash is stored."
    )
