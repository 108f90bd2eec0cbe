"""Conversations and messages (with their stored sources)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb


def create_conversation(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    title: str,
    collections: Sequence[uuid.UUID] | None = None,
) -> uuid.UUID:
    row = conn.execute(
        "insert into conversations (owner_id, title, collections) values (%s, %s, %s) returning id",
        (owner_id, title, list(collections) if collections is not None else None),
    ).fetchone()
    assert row is not None
    created: uuid.UUID = row[0]
    return created


def set_scope(
    conn: psycopg.Connection, *, conversation_id: uuid.UUID, collections: Sequence[uuid.UUID] | None
) -> None:
    """The collections the conversation searches (None: everything its owner may read)."""
    conn.execute(
        "update conversations set collections = %s where id = %s and collections is distinct from %s::uuid[]",
        (
            list(collections) if collections is not None else None,
            conversation_id,
            list(collections) if collections is not None else None,
        ),
    )


def conversation_scope(conn: psycopg.Connection, *, conversation_id: uuid.UUID) -> list[uuid.UUID] | None:
    """The stored scope of a readable conversation (None: everything, or no such conversation)."""
    row = conn.execute("select collections from conversations where id = %s", (conversation_id,)).fetchone()
    return list(row[0]) if row and row[0] is not None else None


def conversation_exists(
    conn: psycopg.Connection, *, conversation_id: uuid.UUID, owner_id: uuid.UUID | None
) -> bool:
    row = conn.execute(
        "select 1 from conversations where id = %s and owner_id is not distinct from %s",
        (conversation_id, owner_id),
    ).fetchone()
    return row is not None


def recent_messages(
    conn: psycopg.Connection, *, conversation_id: uuid.UUID, limit: int
) -> list[tuple[str, str]]:
    """The last `limit` (role, content) pairs, oldest first."""
    rows = conn.execute(
        "select role, content from (select role, content, created_at, id from messages "
        "where conversation_id = %s order by created_at desc, id desc limit %s) m order by created_at, id",
        (conversation_id, limit),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def last_answer(conn: psycopg.Connection, *, conversation_id: uuid.UUID) -> dict[str, Any] | None:
    """The newest assistant message that answered something (content, sources, metadata), or None: what
    a follow-up or an instruction ("展开说说") builds on — a 「谢谢」 in between does not count, nor a
    reply that an instruction needs a model or had nothing to work on."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "select content, sources, metadata from messages where conversation_id = %s "
            "and role = 'assistant' and (metadata ->> 'route') is distinct from 'conversational' "
            "and coalesce(metadata ->> 'generator', '') not in ('needs_model', 'nothing_to_rework') "
            "order by created_at desc, id desc limit 1",
            (conversation_id,),
        ).fetchone()


def add_message(
    conn: psycopg.Connection,
    *,
    conversation_id: uuid.UUID,
    role: str,
    content: str,
    sources: Sequence[dict[str, Any]] = (),
    metadata: dict[str, Any] | None = None,
) -> uuid.UUID:
    row = conn.execute(
        # clock_timestamp, not now(): the user and assistant messages of one turn share a transaction
        # and must still sort in the order they were written.
        "insert into messages (conversation_id, role, content, sources, metadata, created_at) "
        "values (%s, %s, %s, %s, %s, clock_timestamp()) returning id",
        (conversation_id, role, content, Jsonb(list(sources)), Jsonb(metadata or {})),
    ).fetchone()
    conn.execute("update conversations set updated_at = now() where id = %s", (conversation_id,))
    assert row is not None
    created: uuid.UUID = row[0]
    return created


def list_conversations(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, limit: int, offset: int
) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """
            select c.id, c.title, c.created_at, c.updated_at, c.collections
            from conversations c where c.owner_id is not distinct from %(owner_id)s
            order by c.updated_at desc, c.id limit %(limit)s offset %(offset)s
            """,
            {"owner_id": owner_id, "limit": limit, "offset": offset},
        ).fetchall()
    # The counts in a read of their own, not a correlated subquery: on Citus conversations and
    # messages are co-located by tenant, and Citus correlates distributed tables only on that column.
    counts: dict[uuid.UUID, int] = {
        r[0]: int(r[1])
        for r in conn.execute(
            "select conversation_id, count(*) from messages where conversation_id = any(%s) group by 1",
            ([r["id"] for r in rows],),
        ).fetchall()
    }
    for row in rows:
        row["message_count"] = counts.get(row["id"], 0)
    return rows


def list_messages(conn: psycopg.Connection, *, conversation_id: uuid.UUID) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "select id, role, content, sources, metadata, created_at from messages "
            "where conversation_id = %s order by created_at, id",
            (conversation_id,),
        ).fetchall()


def live_chunk_keys(conn: psycopg.Connection, *, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which (document_id, content_hash) pairs still exist among the chunks (stale-citation check)."""
    if not keys:
        return set()
    doc_ids = [k[0] for k in keys]
    hashes = [k[1] for k in keys]
    rows = conn.execute(
        "select distinct c.document_id::text, c.content_hash from chunks c "
        "join unnest(%s::uuid[], %s::text[]) as k(document_id, content_hash) "
        "on c.document_id = k.document_id and c.content_hash = k.content_hash",
        (doc_ids, hashes),
    ).fetchall()
    return {(r[0], r[1]) for r in rows}


def existing_documents(conn: psycopg.Connection, *, ids: Sequence[str]) -> set[str]:
    """Which of these document ids still exist."""
    if not ids:
        return set()
    rows = conn.execute(
        "select id::text from documents where id = any(%s::uuid[])", (list(set(ids)),)
    ).fetchall()
    return {r[0] for r in rows}


def conversation_by_client_key(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, client_key: str
) -> uuid.UUID | None:
    """The conversation an OpenAI-compatible client last saw with this history (RLS: the caller's only)."""
    row = conn.execute(
        "select id from conversations where owner_id is not distinct from %s and client_key = %s "
        "order by updated_at desc limit 1",
        (owner_id, client_key),
    ).fetchone()
    return None if row is None else row[0]


def set_client_key(conn: psycopg.Connection, *, conversation_id: uuid.UUID, client_key: str) -> None:
    conn.execute("update conversations set client_key = %s where id = %s", (client_key, conversation_id))
