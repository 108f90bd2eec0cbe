"""Collections as the caller: what they may see decides 404, what their role allows decides 403.

PostgreSQL's policies enforce the same rules (migration 024); the checks here only turn a refusal
into a message: a collection the caller cannot see does not exist for them (404), one they can see
but whose role does not allow the action is a 403 that says which role would.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from backend.auth.identity import Identity
from backend.db.database import Database
from backend.db.repositories import collections as repo
from backend.db.repositories import documents as documents_repo
from backend.db.repositories import erasure
from backend.errors import Forbidden, InvalidInput, NotFound

Role = Literal["viewer", "editor", "admin"]
_RANK = {"viewer": 1, "editor": 2, "admin": 3}
_MAY = {"editor": "add, re-ingest or delete its documents", "admin": "rename it or manage its members"}


def _user(identity: Identity) -> uuid.UUID:
    if identity.user_id is None:
        raise InvalidInput("collections belong to users: the service path has none (sign in as a user)")
    return identity.user_id


def require_role(
    conn: psycopg.Connection, identity: Identity, collection_id: uuid.UUID, role: Role
) -> dict[str, Any]:
    """The collection, when the caller holds at least `role` in it; NotFound / Forbidden otherwise."""
    found = repo.get_collection(conn, collection_id=collection_id, viewer=identity.user_id)
    if found is None:
        raise NotFound(f"collection {collection_id} does not exist")
    if identity.is_service:
        return found
    held = found["role"]
    if held is None or _RANK[held] < _RANK[role]:
        raise Forbidden(
            f"you are {held or 'not a member'} of collection {collection_id}: "
            f"only its {role}s may {_MAY.get(role, 'do this')}"
        )
    return found


def require_readable(conn: psycopg.Connection, ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """The ids, deduplicated in order, when the caller may read every one; NotFound names one that is not."""
    unique = list(dict.fromkeys(ids))
    readable = repo.readable_collection_ids(conn, ids=unique)
    for collection_id in unique:
        if collection_id not in readable:
            raise NotFound(f"collection {collection_id} does not exist")
    return unique


def create(db: Database, *, identity: Identity, name: str) -> dict[str, Any]:
    owner = _user(identity)
    with db.as_user(identity) as conn:
        return repo.create_collection(conn, owner_id=owner, name=name)


def list_all(db: Database, *, identity: Identity) -> list[dict[str, Any]]:
    with db.as_user(identity, read_only=True) as conn:
        return repo.list_collections(conn, viewer=identity.user_id)


def get(
    db: Database, *, identity: Identity, collection_id: uuid.UUID
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The collection and its members."""
    with db.as_user(identity, read_only=True) as conn:
        found = require_role(conn, identity, collection_id, "viewer")
        return found, repo.list_members(conn, collection_id=collection_id)


def rename(db: Database, *, identity: Identity, collection_id: uuid.UUID, name: str) -> dict[str, Any]:
    with db.as_user(identity) as conn:
        require_role(conn, identity, collection_id, "admin")
        repo.rename_collection(conn, collection_id=collection_id, name=name)
        found = repo.get_collection(conn, collection_id=collection_id, viewer=identity.user_id)
        assert found is not None
        return found


def delete(db: Database, *, identity: Identity, collection_id: uuid.UUID) -> None:
    """Delete a collection (its owner only); its documents stay with their owners, private again."""
    with db.as_user(identity) as conn:
        found = require_role(conn, identity, collection_id, "viewer")
        if not identity.is_service and found["owner_id"] != identity.user_id:
            raise Forbidden(f"only the owner of collection {collection_id} may delete it")
        repo.delete_collection(conn, collection_id=collection_id)


def put_member(
    db: Database, *, identity: Identity, collection_id: uuid.UUID, user_id: uuid.UUID, role: Role
) -> None:
    with db.as_user(identity) as conn:
        found = require_role(conn, identity, collection_id, "admin")
        if user_id == found["owner_id"] and role != "admin":
            raise Forbidden(f"the owner of collection {collection_id} stays its admin")
        repo.put_member(conn, collection_id=collection_id, user_id=user_id, role=role)


def remove_member(db: Database, *, identity: Identity, collection_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """Remove a member (an admin), or leave (anyone, for themselves). Takes effect at once."""
    with db.as_user(identity) as conn:
        found = require_role(
            conn, identity, collection_id, "viewer" if user_id == identity.user_id else "admin"
        )
        if user_id == found["owner_id"]:
            raise Forbidden(f"the owner of collection {collection_id} stays its admin")
        if not repo.remove_member(conn, collection_id=collection_id, user_id=user_id):
            raise NotFound(f"user {user_id} is not a member of collection {collection_id}")


def move_document(
    db: Database, *, identity: Identity, document_id: uuid.UUID, collection_id: uuid.UUID | None
) -> None:
    """Put a document into a collection (its editors only) or take it out (None)."""
    with db.as_user(identity) as conn:
        doc = documents_repo.get_document(
            conn, document_id=document_id, viewer=identity.user_id, all_rows=identity.is_service
        )
        if doc is None:
            raise NotFound(f"document {document_id} does not exist")
        if collection_id is not None:
            require_role(conn, identity, collection_id, "editor")
        current = doc.get("collection_id")
        if current is not None and doc["owner_id"] != identity.user_id:
            require_role(conn, identity, current, "editor")
        if doc["visibility"] == "public":
            raise Forbidden(f"document {document_id} is public: collections hold users' private documents")
        if not repo.set_document_collection(conn, document_id=document_id, collection_id=collection_id):
            raise Forbidden(f"you may read document {document_id} but not change it")
        if current is not None and current != collection_id:
            erasure.queue_erasure(conn, ids=[document_id])
    if current is not None and current != collection_id:
        # Its former members' stored answers lose it: done by a trigger on one node; on a Citus
        # cluster, after this transaction, on their shards (queued above in case that never runs).
        with db.as_user(identity) as conn:
            erasure.erase_copies_elsewhere(conn, ids=[document_id])
