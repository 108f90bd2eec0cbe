"""Personal API keys (migration 021): rows a user manages under RLS, and the backend's key lookup."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row

_COLUMNS = "id, name, prefix, created_at, expires_at, last_used_at"


@dataclass(frozen=True)
class ApiKeyRow:
    id: uuid.UUID
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None


def insert_key(
    conn: psycopg.Connection[Any], *, name: str, prefix: str, key_hash: bytes, expires_at: datetime | None
) -> ApiKeyRow:
    """A new key of the caller (owner_id defaults to auth.uid(); RLS checks it)."""
    with conn.cursor(row_factory=class_row(ApiKeyRow)) as cur:
        row = cur.execute(
            f"insert into api_keys (name, prefix, key_hash, expires_at) values (%s, %s, %s, %s) "
            f"returning {_COLUMNS}",
            (name, prefix, key_hash, expires_at),
        ).fetchone()
    assert row is not None
    return row


def list_keys(conn: psycopg.Connection[Any]) -> list[ApiKeyRow]:
    """The caller's keys, newest first (RLS: only the caller's)."""
    with conn.cursor(row_factory=class_row(ApiKeyRow)) as cur:
        return cur.execute(f"select {_COLUMNS} from api_keys order by created_at desc, id").fetchall()


def count_keys(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select count(*) from api_keys").fetchone()
    assert row is not None
    return int(row[0])


def delete_key(conn: psycopg.Connection[Any], key_id: uuid.UUID) -> bool:
    """Revoke one of the caller's keys; False when the caller has no such key."""
    return conn.execute("delete from api_keys where id = %s", (key_id,)).rowcount == 1


def key_owner(conn: psycopg.Connection[Any], key_hash: bytes) -> tuple[uuid.UUID, uuid.UUID] | None:
    """(owner id, key id) of a live key, as the backend's own role; None for unknown, revoked, expired."""
    row = conn.execute("select owner_id, key_id from api_key_owner(%s)", (key_hash,)).fetchone()
    return None if row is None else (row[0], row[1])
