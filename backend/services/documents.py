"""Reading and deleting documents (ingestion lives in ingestion.py)."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg_pool import ConnectionPool

from backend.db.repositories import documents as repo


def list_documents(
    pool: ConnectionPool, *, limit: int, offset: int, owner_id: uuid.UUID | None = None
) -> tuple[list[dict[str, Any]], int]:
    with pool.connection() as conn:
        return repo.list_documents(conn, owner_id=owner_id, limit=limit, offset=offset)


def get_document(
    pool: ConnectionPool, *, document_id: uuid.UUID, owner_id: uuid.UUID | None = None
) -> dict[str, Any] | None:
    with pool.connection() as conn:
        return repo.get_document(conn, document_id=document_id, owner_id=owner_id)


def delete_document(
    pool: ConnectionPool, *, document_id: uuid.UUID, owner_id: uuid.UUID | None = None
) -> bool:
    with pool.connection() as conn:
        return repo.delete_document(conn, document_id=document_id, owner_id=owner_id)
