"""Collections and their members (migration 024). Every statement runs as the caller: the policies
decide what it sees and changes; these queries only say what is asked."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

_COLUMNS = """
    c.id, c.name, c.owner_id, c.created_at, c.updated_at,
    (select m.role from collection_members m
     where m.collection_id = c.id and m.user_id = %(viewer)s) as role,
    (select count(*) from collection_members m where m.collection_id = c.id) as member_count
"""


def _with_document_counts(conn: psycopg.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each collection's document_count (the documents the caller reads in it). A separate read, not a
    subquery per collection: on a Citus cluster documents is distributed and collections is not, and
    Citus plans no join between the two (docs/scaling.md)."""
    if not rows:
        return rows
    counts: dict[uuid.UUID, int] = dict(
        conn.execute(
            "select collection_id, count(*) from documents where collection_id = any(%s) group by 1",
            ([r["id"] for r in rows],),
        ).fetchall()
    )
    for row in rows:
        row["document_count"] = counts.get(row["id"], 0)
    return rows


def create_collection(conn: psycopg.Connection, *, owner_id: uuid.UUID, name: str) -> dict[str, Any]:
    """A new collection of the caller's (a trigger makes them its admin)."""
    row = conn.execute(
        "insert into collections (owner_id, name) values (%s, %s) returning id", (owner_id, name)
    ).fetchone()
    assert row is not None
    found = get_collection(conn, collection_id=row[0], viewer=owner_id)
    assert found is not None
    return found


def list_collections(conn: psycopg.Connection, *, viewer: uuid.UUID | None) -> list[dict[str, Any]]:
    """The collections the caller may read, by name."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"select {_COLUMNS} from collections c order by c.name, c.id", {"viewer": viewer}
        ).fetchall()
    return _with_document_counts(conn, rows)


def get_collection(
    conn: psycopg.Connection, *, collection_id: uuid.UUID, viewer: uuid.UUID | None
) -> dict[str, Any] | None:
    """One readable collection with the caller's role in it, or None."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"select {_COLUMNS} from collections c where c.id = %(id)s",
            {"id": collection_id, "viewer": viewer},
        ).fetchone()
    return None if row is None else _with_document_counts(conn, [row])[0]


def readable_collection_ids(conn: psycopg.Connection, *, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Of these ids, the collections the caller may read."""
    rows = conn.execute("select id from collections where id = any(%s)", (list(ids),)).fetchall()
    return {r[0] for r in rows}


def rename_collection(conn: psycopg.Connection, *, collection_id: uuid.UUID, name: str) -> bool:
    cur = conn.execute("update collections set name = %s where id = %s", (name, collection_id))
    return cur.rowcount > 0


def delete_collection(conn: psycopg.Connection, *, collection_id: uuid.UUID) -> bool:
    """Delete it; its documents stay with their owners (documents.collection_id set null)."""
    cur = conn.execute("delete from collections where id = %s", (collection_id,))
    return cur.rowcount > 0


def list_members(conn: psycopg.Connection, *, collection_id: uuid.UUID) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "select m.user_id, m.role, m.added_at, (m.user_id = c.owner_id) as owner "
            "from collection_members m join collections c on c.id = m.collection_id "
            "where m.collection_id = %s order by m.added_at, m.user_id",
            (collection_id,),
        ).fetchall()


def put_member(conn: psycopg.Connection, *, collection_id: uuid.UUID, user_id: uuid.UUID, role: str) -> bool:
    """Add the user with this role, or change their role. False: the policies refused it."""
    cur = conn.execute(
        "insert into collection_members (collection_id, user_id, role) values (%s, %s, %s) "
        "on conflict (collection_id, user_id) do update set role = excluded.role returning 1",
        (collection_id, user_id, role),
    )
    return cur.rowcount > 0


def remove_member(conn: psycopg.Connection, *, collection_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    cur = conn.execute(
        "delete from collection_members where collection_id = %s and user_id = %s", (collection_id, user_id)
    )
    return cur.rowcount > 0


def set_document_collection(
    conn: psycopg.Connection, *, document_id: uuid.UUID, collection_id: uuid.UUID | None
) -> bool:
    """Put a document into a collection (or take it out, None). False: the policies refused it."""
    cur = conn.execute("update documents set collection_id = %s where id = %s", (collection_id, document_id))
    return cur.rowcount > 0
