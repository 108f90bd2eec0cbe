"""A queued file's bytes back to documents: an uploaded file (parsed in the sandbox, as the direct
upload does), or the documents of a /documents/batch request (JSON, validated when it was submitted)."""

from __future__ import annotations

import json
from typing import Any

from backend.errors import InvalidInput
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import as_version_of, load_bytes
from backend.ingest.sandbox import ParseLimits

BATCH_CONTENT_TYPE = "application/vnd.pgrag.documents+json"


def encode_batch(documents: list[LoadedDocument]) -> bytes:
    """The documents of a batch request as the body of one queued item."""
    return json.dumps(
        [
            {
                "title": d.title,
                "content": d.content,
                "source": d.source,
                "external_id": d.external_id,
                "metadata": d.metadata,
            }
            for d in documents
        ],
        ensure_ascii=False,
    ).encode("utf-8")


def decode_batch(body: bytes) -> list[LoadedDocument]:
    try:
        rows: list[dict[str, Any]] = json.loads(body)
    except ValueError as exc:
        raise InvalidInput(f"the queued batch is not readable JSON: {exc}") from exc
    return [
        LoadedDocument(
            title=r["title"],
            content=r["content"],
            source=r["source"],
            filename=None,
            content_type="text/markdown",
            external_id=r["external_id"],
            metadata=r["metadata"],
        )
        for r in rows
    ]


def documents_of(
    kind: str,
    body: bytes,
    filename: str,
    content_type: str | None,
    limits: ParseLimits,
    external_id: str | None = None,
) -> list[LoadedDocument | LoadFailure]:
    """What the file holds (under `external_id` when it is a new version of that document);
    UnsupportedDocument / ParseLimitExceeded when it cannot be read."""
    if kind == "batch":
        return list(decode_batch(body))
    return list(as_version_of(load_bytes(body, filename, content_type, limits=limits), external_id))
