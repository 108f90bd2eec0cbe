"""A document's text, read back from its chunks in order (the MCP tool get_document)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.rows import dict_row


def read_chunks(
    conn: psycopg.Connection, *, document_id: uuid.UUID, from_position: int, limit: int
) -> list[dict[str, Any]]:
    """Chunks of one document from `from_position` on, in order; row-level security decides which
    rows the connection's identity sees (none of a document it may not read)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """
            select c.id as chunk_id, c.position, c.heading_path, c.content
            from chunks c
            where c.document_id = %(document_id)s and c.position >= %(from_position)s
            order by c.position
            limit %(limit)s
            """,
            {"document_id": document_id, "from_position": from_position, "limit": limit},
        ).fetchall()
