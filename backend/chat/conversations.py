"""Reading conversations back, with stale-citation detection."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg

from backend.auth.identity import Identity
from backend.db.database import Database
from backend.db.repositories import conversations as repo
from backend.errors import NotFound
from backend.llm import Turn


def recent_turns(
    conn: psycopg.Connection, *, conversation_id: uuid.UUID, identity: Identity, limit: int
) -> list[Turn]:
    """The last `limit` messages of one of the caller's conversations, oldest first (another user's is
    a 404, like one that does not exist); the history a follow-up question is read with."""
    if not repo.conversation_exists(conn, conversation_id=conversation_id, owner_id=identity.user_id):
        raise NotFound(f"conversation {conversation_id} does not exist")
    return [
        Turn(role, content)
        for role, content in repo.recent_messages(conn, conversation_id=conversation_id, limit=limit)
    ]


@dataclass(frozen=True)
class PreviousAnswer:
    """The newest answer of the conversation: what a follow-up or an instruction builds on."""

    content: str
    sources: list[dict[str, Any]] = field(default_factory=list)  # as stored, numbered [n]
    query: str = ""  # the query its turn searched with ("" for a turn that searched nothing)
    route: str = ""

    def answered(self) -> bool:
        """It cited a source: an answer an instruction ("展开说说") can work on."""
        return any(s.get("cited") for s in self.sources)

    def top_title(self) -> str:
        """The title of the document the answer cited first (local sources only), or ""."""
        cited = [s for s in self.sources if s.get("cited") and s.get("kind", "local") == "local"]
        return str(cited[0].get("title") or "") if cited else ""


def previous_answer(conn: psycopg.Connection, *, conversation_id: uuid.UUID) -> PreviousAnswer | None:
    """The conversation's newest answer, or None (call after recent_turns checked the owner)."""
    row = repo.last_answer(conn, conversation_id=conversation_id)
    if row is None:
        return None
    metadata = row["metadata"] or {}
    return PreviousAnswer(
        content=row["content"],
        sources=list(row["sources"] or []),
        query=str((metadata.get("rewrite") or {}).get("query") or ""),
        route=str(metadata.get("route") or ""),
    )


def list_conversations(db: Database, *, identity: Identity, limit: int, offset: int) -> list[dict[str, Any]]:
    """The caller's conversations, most recent first (RLS: their own only)."""
    with db.as_user(identity, read_only=True) as conn:
        return repo.list_conversations(conn, owner_id=identity.user_id, limit=limit, offset=offset)


def read_messages(db: Database, *, conversation_id: uuid.UUID, identity: Identity) -> list[dict[str, Any]]:
    """Messages oldest first; each stored source gains `stale` (its text is no longer in the document).

    Another user's conversation is a 404, like one that does not exist: the caller learns nothing.
    A web source is never stale here: it cites the page as it was fetched (its fetched_at says when).
    A source of a deleted document was erased in the database when it was deleted (migration 018):
    it is stored with `deleted: true` and no passage, title or ids, and reads as stale, "document deleted".
    """
    with db.as_user(identity, read_only=True) as conn:
        if not repo.conversation_exists(conn, conversation_id=conversation_id, owner_id=identity.user_id):
            raise NotFound(f"conversation {conversation_id} does not exist")
        messages = repo.list_messages(conn, conversation_id=conversation_id)
        local = [s for m in messages for s in m["sources"] if s.get("kind", "local") == "local"]
        keys = [(s["document_id"], s["content_hash"]) for s in local]
        live = repo.live_chunk_keys(conn, keys=keys)
        existing_docs = {k[0] for k in live} | repo.existing_documents(conn, ids=[k[0] for k in keys])
    for message in messages:
        for source in message["sources"]:
            source.setdefault("kind", "local")
            source["stale"] = (source["document_id"], source["content_hash"]) not in live and source[
                "kind"
            ] == "local"
            if source["stale"]:
                source["stale_reason"] = (
                    "document changed" if source["document_id"] in existing_docs else "document deleted"
                )
    return messages
