"""The documents one synced source (a folder, a URL list) holds: those whose external_id starts with the
source's prefix (`python -m backend sync`, backend/documents/sync.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg

from backend.db.repositories.documents import Deleted


def external_ids_with_prefix(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, prefix: str
) -> dict[str, uuid.UUID]:
    """{external_id: id} of the owner's documents under `prefix` (a parameter, never a pattern)."""
    rows = conn.execute(
        "select external_id, id from documents "
        "where owner_id is not distinct from %(owner_id)s and starts_with(external_id, %(prefix)s)",
        {"owner_id": owner_id, "prefix": prefix},
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def delete_documents(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, ids: Sequence[uuid.UUID]
) -> Deleted:
    """Delete the owner's documents by id (chunks cascade); which went that others may cite."""
    rows = conn.execute(
        "delete from documents where owner_id is not distinct from %s and id = any(%s) "
        "returning id, visibility = 'public' or collection_id is not null",
        (owner_id, list(ids)),
    ).fetchall()
    return Deleted(shared=[r[0] for r in rows if r[1]])
