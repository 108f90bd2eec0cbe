"""Chunks embedded by another model than the current one, and their new vectors (`reembed`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg


@dataclass(frozen=True)
class ChunkToReembed:
    id: int
    owner_id: uuid.UUID | None  # whose embedding-cache scope its vector belongs to
    title: str
    heading_path: list[str]
    content: str


def chunks_embedded_by_other_models(
    conn: psycopg.Connection, *, model: str, after_id: int, limit: int
) -> list[ChunkToReembed]:
    """The chunks not embedded by `model` (with what their embedded text is made of), by id."""
    rows = conn.execute(
        "select id, owner_id, document_id, heading_path, content from chunks "
        "where embedding_model <> %(model)s and id > %(after)s order by id limit %(limit)s",
        {"model": model, "after": after_id, "limit": limit},
    ).fetchall()
    # The titles in a read of their own (not a join: see chunk_summaries).
    titles: dict[uuid.UUID, str] = {
        r[0]: r[1]
        for r in conn.execute(
            "select id, title from documents where id = any(%s)", (list({r[2] for r in rows}),)
        ).fetchall()
    }
    return [ChunkToReembed(r[0], r[1], titles.get(r[2], ""), list(r[3]), r[4]) for r in rows]


def count_chunks_embedded_by_other_models(conn: psycopg.Connection, *, model: str) -> int:
    row = conn.execute("select count(*) from chunks where embedding_model <> %s", (model,)).fetchone()
    return int(row[0]) if row else 0


def update_embeddings(
    conn: psycopg.Connection, *, model: str, vectors: Sequence[tuple[int, np.ndarray, str]]
) -> None:
    """Replace the embedding, model identity and embedded text's hash of these (id, vector, hash)."""
    with conn.cursor() as cur:
        cur.executemany(
            "update chunks set embedding = %s, embedding_model = %s, embed_hash = %s where id = %s",
            [(vector, model, embed_hash, chunk_id) for chunk_id, vector, embed_hash in vectors],
        )
