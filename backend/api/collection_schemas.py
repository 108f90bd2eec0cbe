"""Request and response bodies of /collections (issue 27)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["viewer", "editor", "admin"]


class CollectionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    name: str = Field(min_length=1, max_length=200)


class CollectionOut(BaseModel):
    id: uuid.UUID
    name: str
    owner_id: uuid.UUID
    role: Role | None = Field(description="your role in it: viewer, editor or admin (the owner is admin)")
    member_count: int
    document_count: int
    created_at: datetime
    updated_at: datetime


class CollectionList(BaseModel):
    items: list[CollectionOut]


class MemberIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Role = Field(
        description="viewer: search, chat, read; editor: + add, re-ingest, delete documents; admin: + members"
    )


class MemberOut(BaseModel):
    user_id: uuid.UUID
    role: Role
    owner: bool
    added_at: datetime


class CollectionDetail(CollectionOut):
    members: list[MemberOut]
