"""Reading conversations back, with stale-citation detection."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg_pool import ConnectionPool

from backend.db.repositories import conversations as repo
from backend.errors import NotFound


def list_conversations(
    pool: ConnectionPool, *, owner_id: uuid.UUID | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    with pool.connection() as conn:
        return repo.list_conversations(conn, owner_id=owner_id, limit=limit, offset=offset)


def read_messages(
    pool: ConnectionPool, *, conversation_id: uuid.UUID, owner_id: uuid.UUID | None
) -> list[dict[str, Any]]:
    """Messages oldest first; each stored source gains `stale` (its text is no longer in the document)."""
    with pool.connection() as conn:
        if not repo.conversation_exists(conn, conversation_id=conversation_id, owner_id=owner_id):
            raise NotFound(f"conversation {conversation_id} does not exist")
        messages = repo.list_messages(conn, conversation_id=conversation_id)
        keys = [(s["document_id"], s["content_hash"]) for m in messages for s in m["sources"]]
        live = repo.live_chunk_keys(conn, keys=keys)
        existing_docs = {k[0] for k in live} | repo.existing_documents(conn, ids=[k[0] for k in keys])
    for message in messages:
        for source in message["sources"]:
            key = (source["document_id"], source["content_hash"])
            source["stale"] = key not in live
            if source["stale"]:
                source["stale_reason"] = (
                    "document changed" if source["document_id"] in existing_docs else "document deleted"
                )
    return messages
