"""Request and response bodies of /collections (issue 27)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["viewer", "editor", "admin"]

COLLECTIONS_DESCRIPTION = (
    "search only these team collections (ids from GET /collections; each must be one you are a member "
    "of, else 404). Omitted: everything you may read (public documents, your own, your collections')."
)


Collections = Annotated[
    list[uuid.UUID] | None, Field(min_length=1, max_length=100, description=COLLECTIONS_DESCRIPTION)
]
ChatCollections = Annotated[
    list[uuid.UUID] | None,
    Field(
        min_length=1,
        max_length=100,
        description=COLLECTIONS_DESCRIPTION + " Stored with the conversation: a later turn that omits it "
        "keeps the conversation's scope; null resets it to everything.",
    ),
]


class DocumentPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collection_id: uuid.UUID | None = Field(
        description="the team collection to put the document into (you must be one of its editors); "
        "null takes it out (it stays its owner's)"
    )


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
