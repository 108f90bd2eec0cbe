"""list_documents and get_document: the documents service's reads, plus a document's text in pages."""

from __future__ import annotations

import uuid
from typing import Any

from backend.auth.identity import Identity
from backend.db.database import Database
from backend.db.repositories import document_text
from backend.documents import service as documents_service
from backend.errors import NotFound
from backend.mcp_server.shapes import document

CHUNKS_PER_READ = 200  # a page of text is read in batches of chunks until max_chars


def list_page(db: Database, identity: Identity, *, limit: int, offset: int) -> dict[str, Any]:
    items, total = documents_service.list_documents(db, identity=identity, limit=limit, offset=offset)
    return {"items": [document(i) for i in items], "total": total, "limit": limit, "offset": offset}


def read(
    db: Database, identity: Identity, *, document_id: uuid.UUID, from_position: int, max_chars: int
) -> dict[str, Any]:
    """The document's metadata and its text from `from_position` on, about max_chars of it (whole chunks,
    at least one); next_position says where the rest starts (None: the end)."""
    row = documents_service.get_document(db, identity=identity, document_id=document_id)
    if row is None:
        raise NotFound(f"document {document_id} does not exist")
    with db.as_user(identity, read_only=True) as conn:
        chunks = document_text.read_chunks(
            conn, document_id=document_id, from_position=from_position, limit=CHUNKS_PER_READ
        )
    parts: list[str] = []
    size, next_position = 0, None
    for i, chunk in enumerate(chunks):
        if parts and size + len(chunk["content"]) > max_chars:
            next_position = chunk["position"]
            break
        parts.append(chunk["content"])
        size += len(chunk["content"])
        if i == len(chunks) - 1 and len(chunks) == CHUNKS_PER_READ:
            next_position = chunk["position"] + 1
    return {
        **document(row),
        "from_position": from_position,
        "text": "\n\n".join(parts),
        "next_position": next_position,
    }
