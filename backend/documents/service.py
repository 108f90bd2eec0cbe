"""Reading and deleting documents as the caller (ingestion lives in ingestion.py).

Row-level security decides what a caller sees: public documents, their own and those of the
collections they are a member of. A document they cannot see is a 404, exactly like one that does
not exist; one they can see but not change is a 403 that says why.
"""

from __future__ import annotations

import uuid
from typing import Any

from backend.auth.identity import Identity
from backend.collections import service as collections
from backend.db.database import Database
from backend.db.repositories import documents as repo
from backend.db.repositories import erasure
from backend.errors import Forbidden, InvalidInput, NotFound
from backend.ingest.provenance import TextWindow, text_window


def list_documents(
    db: Database,
    *,
    identity: Identity,
    limit: int,
    offset: int,
    collection_id: uuid.UUID | None = None,
    mine: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    if mine and collection_id is not None:
        raise InvalidInput("mine lists the documents outside any collection: give mine or collection_id")
    with db.as_user(identity, read_only=True) as conn:
        if collection_id is not None:
            collections.require_role(conn, identity, collection_id, "viewer")
        return repo.list_documents(
            conn,
            viewer=identity.user_id,
            all_rows=identity.is_service,
            limit=limit,
            offset=offset,
            collection_id=collection_id,
            mine=mine,
        )


def get_document(db: Database, *, identity: Identity, document_id: uuid.UUID) -> dict[str, Any] | None:
    with db.as_user(identity, read_only=True) as conn:
        return repo.get_document(
            conn, document_id=document_id, viewer=identity.user_id, all_rows=identity.is_service
        )


def delete_document(db: Database, *, identity: Identity, document_id: uuid.UUID) -> None:
    """Delete one of the caller's documents (RLS: a user deletes only their own; public documents
    only the service path). NotFound for what the caller cannot see, Forbidden for a public document
    it can read but not delete."""
    with db.as_user(identity) as conn:
        deleted = repo.delete_document(
            conn, document_id=document_id, owner=identity.user_id, all_rows=identity.is_service
        )
        if deleted is not None:
            erasure.queue_erasure(conn, ids=deleted.shared)
    if deleted is not None:
        if deleted.shared:
            with db.as_user(identity) as conn:
                erasure.erase_copies_elsewhere(conn, ids=deleted.shared)
        return
    with db.as_user(identity, read_only=True) as conn:
        readable = repo.get_document(
            conn, document_id=document_id, viewer=identity.user_id, all_rows=identity.is_service
        )
    if readable is None:
        raise NotFound(f"document {document_id} does not exist")
    if readable["collection_id"] is not None:
        with db.as_user(identity, read_only=True) as conn:
            collections.require_role(conn, identity, readable["collection_id"], "editor")
    if readable["visibility"] != "public":
        raise Forbidden(f"you may read document {document_id} but not delete it")
    raise Forbidden(f"document {document_id} is public: only the service path (SERVICE_API_KEY) deletes it")


def read_text(
    db: Database, *, identity: Identity, document_id: uuid.UUID, start: int, end: int, around: int
) -> TextWindow:
    """The readable document's text from `around` characters before `start` to as many after `end`
    (a cited passage in its surroundings), rebuilt from its chunks; NotFound when the caller cannot
    read the document or no chunk of it records that place."""
    with db.as_user(identity, read_only=True) as conn:
        pieces = repo.chunk_texts_between(
            conn,
            document_id=document_id,
            start=max(0, start - around),
            end=end + around,
            viewer=identity.user_id,
            all_rows=identity.is_service,
        )
    window = text_window(pieces, max(0, start - around), end + around)
    if window is None:
        raise NotFound(f"document {document_id} has no stored text at characters {start}-{end}")
    return window
