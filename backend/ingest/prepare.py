"""Preparation: a LoadedDocument to chunks with tokens, embedding text, hashes and metadata (no I/O)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from backend.config import Settings
from backend.db.repositories import documents as documents_repo
from backend.errors import InvalidInput
from backend.ingest.chunking import Chunk, chunk_text
from backend.ingest.documents import LoadedDocument
from backend.ingest.metadata import chunk_metadata, document_metadata, validate_metadata
from backend.ingest.provenance import PROVENANCE_KEY, SourceMap
from backend.text import index_tokens, normalize
from backend.text.normalize import clean_document_text, has_control_characters, strip_control_characters


@dataclass
class PreparedChunk:
    chunk: Chunk
    tokens: str
    embed_hash: str
    embed_text: str
    content_hash: str
    metadata: dict[str, Any]


@dataclass
class PreparedDocument:
    external_id: str
    title: str
    source: str
    content_hash: str
    metadata: dict[str, Any]
    chunks: list[PreparedChunk]

    def row(self) -> documents_repo.DocumentRow:
        return documents_repo.DocumentRow(
            self.external_id, self.title, self.source, self.content_hash, self.metadata
        )

    def chunk_rows(self, vectors: dict[str, np.ndarray]) -> list[documents_repo.ChunkRow]:
        """The rows write_documents copies, with each chunk's vector looked up by its embed hash."""
        return [
            documents_repo.ChunkRow(
                c.chunk.position,
                c.chunk.content,
                c.chunk.heading_path,
                c.content_hash,
                c.tokens,
                vectors[c.embed_hash],
                c.metadata,
                c.embed_hash,
            )
            for c in self.chunks
        ]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embedding_text(title: str, heading_path: Sequence[str], content: str) -> str:
    """The text that is embedded and indexed for a chunk: "title > headings" then the chunk.

    Questions name the entity a document is about far more often than its paragraphs repeat it.
    A top heading that repeats the title is left out.
    """
    path = list(heading_path[1:] if heading_path[:1] and heading_path[0] == title else heading_path)
    context = " > ".join([title, *path] if title else path)
    return normalize(f"{context}\n{content}" if context else content)


def prepare_document(doc: LoadedDocument, settings: Settings) -> PreparedDocument:
    """Validate, chunk, segment and describe one document (no I/O)."""
    s = settings
    if doc.external_id is not None and has_control_characters(doc.external_id):
        raise InvalidInput(f"external_id {doc.external_id!r} contains control characters")
    # Whatever path a document came by (a file loader or a JSON body), its text is stored without
    # control characters: PostgreSQL refuses NUL, and no reader wants the others.
    content = clean_document_text(doc.content)
    doc = replace(
        doc,
        title=strip_control_characters(doc.title),
        source=strip_control_characters(doc.source),
        content=content,
        spans=doc.spans if content == doc.content else (),  # parsers give clean text: offsets hold
    )
    if not doc.content.strip():
        raise InvalidInput(f"{doc.source}: the document has no text")
    if len(doc.content) > s.max_document_chars:
        raise InvalidInput(
            f"{doc.source}: {len(doc.content)} characters exceeds MAX_DOCUMENT_CHARS ({s.max_document_chars})"
        )
    validate_metadata(doc.metadata, s.metadata_whitelist)
    content_hash = sha256(f"{doc.title}\x00{doc.content}")
    external_id = doc.external_id or f"sha256:{content_hash[:32]}"
    meta = document_metadata(doc)
    places = SourceMap(doc.spans)
    chunks = []
    for chunk in chunk_text(
        doc.content, content_type=doc.content_type, size=s.chunk_size, overlap=s.chunk_overlap
    ):
        embed_text = embedding_text(doc.title, chunk.heading_path, chunk.content)
        chunk_meta = {
            **meta,
            "doc_id": external_id,
            **chunk_metadata(
                chunk.content,
                min_chars=s.chunk_min_chars,
                sat_len=s.quality_sat_len,
                keyphrase_top_k=s.keyphrase_top_k,
            ),
            # Where the chunk came from (character offsets; page, slide, sheet rows, chapter): every
            # source that cites the chunk carries it (backend/ingest/provenance.py).
            PROVENANCE_KEY: places.locate(chunk.start, chunk.end).stored(),
        }
        chunks.append(
            PreparedChunk(
                chunk,
                index_tokens(embed_text),
                sha256(embed_text),
                embed_text,
                sha256(chunk.content),
                chunk_meta,
            )
        )
    if not chunks:
        raise InvalidInput(f"{doc.source}: the document has no text to index")
    return PreparedDocument(external_id, doc.title, doc.source, content_hash, meta, chunks)
