"""Ingestion: loaded documents -> chunks with jieba tokens and embeddings, idempotent and atomic.

Per group of documents: (1) prepare (chunk, segment, metadata) in Python; (2) compare with what is
stored, in a short read; (3) embed only what the embedding cache lacks, holding no connection while the
provider works; (4) write the changed documents in one transaction, with one upsert of their rows, one
DELETE of their old chunks and one binary COPY of the new ones. A provider failure in (3) writes
nothing for the group, so the previous version of every document stays.

Bulk mode (`ingest(bulk=True)`, `python -m backend ingest --bulk`) runs the whole load in one
transaction: the HNSW and GIN indexes of chunks are dropped before the first write and rebuilt from
their catalogued definitions at the end, and term statistics are refreshed once. It holds an ACCESS
EXCLUSIVE lock on chunks until it commits (searches wait); any failure rolls everything back.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from backend.auth.identity import Identity, cache_scope
from backend.collections.service import require_role
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import document_rewrite, erasure
from backend.db.repositories import documents as documents_repo
from backend.documents.bulk_load import BulkLoad
from backend.documents.embedding_store import embed_with_cache, forget_embeddings
from backend.documents.outcomes import (
    ChunkCallback,
    ChunkCounter,
    DocumentOutcome,
    IngestSummary,
    ProgressCallback,
    Status,
)
from backend.embeddings import Embedder
from backend.errors import DomainError, InvalidInput, ProviderError
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.prepare import PreparedChunk, PreparedDocument, prepare_document

logger = logging.getLogger(__name__)

# Metadata keys that change on every run and must not make a document look changed.
_VOLATILE_KEYS = ("created_at",)


class IngestionService:
    """Turns LoadedDocuments into stored, searchable chunks."""

    def __init__(self, db: Database, embedder: Embedder, settings: Settings) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings

    def ingest(
        self,
        items: Iterable[LoadedDocument | LoadFailure],
        *,
        identity: Identity | None,
        atomic: bool = False,
        bulk: bool = False,
        on_progress: ProgressCallback | None = None,
        on_chunks: ChunkCallback | None = None,
        collection_id: uuid.UUID | None = None,
    ) -> IngestSummary:
        """Ingest documents as `identity` (RLS decides what it may write; a user's documents are
        theirs and private, the service's public), or with identity None as the backend's own role
        (the CLI: public documents). atomic=True: all or nothing (the API's batch); else commit per
        group.

        bulk=True: one transaction with deferred index maintenance (module docstring), as the
        backend's own role only; a provider failure then raises and nothing is stored, as with atomic.
        on_chunks: (chunks with their vector, chunks prepared) as each embedding batch returns.
        collection_id: the documents go into that team collection (the caller must be one of its
        editors); a document of that external id already in the collection is re-ingested in place,
        whoever owns it. None leaves each existing document in the collection it is in.
        """
        if bulk and identity is not None:
            raise InvalidInput("bulk loads run as the backend's own role (the CLI), not as a user")
        if collection_id is not None:
            if identity is None or identity.user_id is None:
                raise InvalidInput("collections hold users' documents: sign in as a user to add to one")
            with self.db.as_user(identity, read_only=True) as conn:
                require_role(conn, identity, collection_id, "editor")
        started = time.perf_counter()
        summary = IngestSummary()
        counter = ChunkCounter(on_chunks)
        groups = (
            [self._prepare_all(items, summary, strict=atomic)] if atomic else self._groups(items, summary)
        )
        if bulk:
            try:
                with self.db.owner() as conn, conn.transaction():
                    load = BulkLoad(conn, self.settings)
                    self._ingest_groups(
                        groups,
                        identity,
                        summary,
                        on_progress,
                        counter,
                        raise_provider_errors=True,
                        bulk=load,
                    )  # (bulk loads are the CLI's: no collection)
                    summary.bulk = load.finish()
            except ProviderError as exc:
                raise ProviderError(f"bulk load rolled back, nothing was stored: {exc}") from exc
        else:
            self._ingest_groups(
                groups,
                identity,
                summary,
                on_progress,
                counter,
                raise_provider_errors=atomic,
                collection_id=collection_id,
            )
        summary.seconds = time.perf_counter() - started
        return summary

    def _ingest_groups(
        self,
        groups: Iterable[list[PreparedDocument]],
        identity: Identity | None,
        summary: IngestSummary,
        on_progress: ProgressCallback | None,
        counter: ChunkCounter,
        *,
        raise_provider_errors: bool,
        bulk: BulkLoad | None = None,
        collection_id: uuid.UUID | None = None,
    ) -> None:
        aborted: str | None = None
        for group in groups:
            if aborted:
                summary.outcomes.extend(self._failed(d, aborted) for d in group)
                continue
            try:
                self._ingest_group(group, identity, summary, counter, bulk, collection_id)
            except ProviderError as exc:
                if raise_provider_errors:
                    raise
                aborted = f"not stored: the embedding provider failed ({exc})"
                summary.outcomes.extend(self._failed(d, aborted) for d in group)
            if on_progress:
                on_progress(summary, sum(len(d.chunks) for d in group))

    # --- preparation (pure Python) ---------------------------------------------------------------

    def _groups(
        self, items: Iterable[LoadedDocument | LoadFailure], summary: IngestSummary
    ) -> Iterator[list[PreparedDocument]]:
        group: list[PreparedDocument] = []
        chunk_total = 0
        for prepared in self._prepare_each(items, summary, strict=False):
            group.append(prepared)
            chunk_total += len(prepared.chunks)
            if chunk_total >= self.settings.ingest_embed_batch_size:
                yield group
                group, chunk_total = [], 0
        if group:
            yield group

    def _prepare_all(
        self, items: Iterable[LoadedDocument | LoadFailure], summary: IngestSummary, strict: bool
    ) -> list[PreparedDocument]:
        return list(self._prepare_each(items, summary, strict=strict))

    def _prepare_each(
        self, items: Iterable[LoadedDocument | LoadFailure], summary: IngestSummary, strict: bool
    ) -> Iterator[PreparedDocument]:
        seen: set[str] = set()
        for item in items:
            if isinstance(item, LoadFailure):
                if strict:
                    raise InvalidInput(f"{item.source}: {item.reason}")
                summary.outcomes.append(
                    DocumentOutcome(item.source, "", item.source, "failed", error=item.reason)
                )
                continue
            try:
                prepared = self.prepare(item)
                if prepared.external_id in seen:
                    raise InvalidInput(f"external_id {prepared.external_id!r} appears twice in this batch")
                seen.add(prepared.external_id)
            except DomainError as exc:
                if strict:
                    raise
                ident = item.external_id or item.filename or item.source
                summary.outcomes.append(
                    DocumentOutcome(ident, item.title, item.source, "failed", error=str(exc))
                )
                continue
            yield prepared

    def prepare(self, doc: LoadedDocument) -> PreparedDocument:
        """Validate, chunk, segment and describe one document (no I/O)."""
        return prepare_document(doc, self.settings)

    # --- storage ---------------------------------------------------------------------------------

    def _ingest_group(
        self,
        group: list[PreparedDocument],
        identity: Identity | None,
        summary: IngestSummary,
        counter: ChunkCounter,
        bulk: BulkLoad | None,
        collection_id: uuid.UUID | None = None,
    ) -> None:
        model = self.embedder.model_id
        owner_id = identity.user_id if identity is not None else None
        with self._transaction(identity, bulk) as conn:
            existing = documents_repo.find_existing(
                conn,
                owner_id=owner_id,
                external_ids=[d.external_id for d in group],
                collection_id=collection_id,
            )
        changed: list[PreparedDocument] = []
        for doc in group:
            old = existing.get(doc.external_id)
            target = collection_id or (old.collection_id if old is not None else None)
            if old is not None and old.collection_id == target and self.is_unchanged(doc, old, model):
                summary.outcomes.append(
                    DocumentOutcome(
                        doc.external_id, doc.title, doc.source, "unchanged", old.id, old.chunk_count
                    )
                )
            else:
                if old is not None and "created_at" in old.metadata:
                    doc.metadata["created_at"] = old.metadata["created_at"]
                    for c in doc.chunks:
                        c.metadata["created_at"] = old.metadata["created_at"]
                changed.append(doc)
        group_chunks = sum(len(d.chunks) for d in group)
        counter.planned(group_chunks, group_chunks - sum(len(d.chunks) for d in changed))
        if not changed:
            return
        if collection_id is None and identity is not None:
            # A changed document stays in its collection: the collection's editors (only) rewrite it.
            kept_in = {
                o.collection_id for d in changed if (o := existing.get(d.external_id)) and o.collection_id
            }
            if kept_in:
                with self.db.as_user(identity, read_only=True) as conn:
                    for kept in sorted(kept_in):
                        require_role(conn, identity, kept, "editor")
        # A collection's documents are cached in the collection's scope (migration 024): its editors
        # may read them all, and no one else looks there.
        scope = collection_id or cache_scope(owner_id)
        vectors = self._embeddings([c for d in changed for c in d.chunks], summary, scope, counter)
        moved = _moved_out(changed, existing, collection_id)
        if bulk is not None:
            bulk.start()
        with self._transaction(identity, bulk) as conn:
            # Each document is written as its owner's: an editor re-ingesting another member's
            # document of the collection replaces it in place (the policies let editors write it).
            by_owner: dict[uuid.UUID | None, list[PreparedDocument]] = {}
            for doc in changed:
                old = existing.get(doc.external_id)
                by_owner.setdefault(old.owner_id if old is not None else owner_id, []).append(doc)
            for owner, docs in by_owner.items():
                self._write(
                    conn, docs, vectors, owner, summary, collection_id, existing, replace=owner != owner_id
                )
            erasure.queue_erasure(conn, ids=moved)
        self._forget_replaced(changed, existing, scope)
        if moved and identity is not None:  # as PATCH does: their former readers' answers lose them
            with self.db.as_user(identity) as conn:
                erasure.erase_copies_elsewhere(conn, ids=moved)

    @contextmanager
    def _transaction(self, identity: Identity | None, bulk: BulkLoad | None) -> Iterator[psycopg.Connection]:
        """The bulk load's connection (chunks may be locked for everyone else); else one transaction
        as the writer (RLS applies), or as the backend's own role for identity None."""
        if bulk is not None:
            yield bulk.conn
        elif identity is None:
            with self.db.owner() as conn, conn.transaction():
                yield conn
        else:
            with self.db.as_user(identity) as conn:
                yield conn

    def _write(
        self,
        conn: psycopg.Connection,
        changed: list[PreparedDocument],
        vectors: dict[str, np.ndarray],
        owner_id: uuid.UUID | None,
        summary: IngestSummary,
        collection_id: uuid.UUID | None = None,
        existing: dict[str, documents_repo.ExistingDocument] | None = None,
        *,
        replace: bool = False,
    ) -> None:
        def row(doc: PreparedDocument) -> documents_repo.DocumentRow:
            old = (existing or {}).get(doc.external_id)
            target = collection_id or (old.collection_id if old is not None else None)
            return dataclasses.replace(doc.row(), collection_id=target)

        old = existing or {}
        if replace:  # another member's documents of the collection: rewritten by id
            written = document_rewrite.replace_documents(
                conn,
                owner_id=owner_id,
                embedding_model=self.embedder.model_id,
                documents=[(old[d.external_id].id, row(d), d.chunk_rows(vectors)) for d in changed],
            )
        else:
            written = documents_repo.write_documents(
                conn,
                owner_id=owner_id,
                embedding_model=self.embedder.model_id,
                documents=[(row(doc), doc.chunk_rows(vectors)) for doc in changed],
            )
        for doc, w in zip(changed, written, strict=True):
            status: Status = "created" if w.created else "updated"
            summary.outcomes.append(
                DocumentOutcome(doc.external_id, doc.title, doc.source, status, w.id, len(doc.chunks))
            )

    @staticmethod
    def is_unchanged(doc: PreparedDocument, old: documents_repo.ExistingDocument, model: str) -> bool:
        """True when storing `doc` again would change nothing (content, metadata, model, chunks)."""

        def stable(meta: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in meta.items() if k not in _VOLATILE_KEYS}

        return (
            old.content_hash == doc.content_hash
            and stable(old.metadata) == stable(doc.metadata)
            and old.embedding_models == (model,)
            and old.chunk_count == len(doc.chunks)
        )

    def _forget_replaced(
        self,
        changed: list[PreparedDocument],
        existing: dict[str, documents_repo.ExistingDocument],
        scope: uuid.UUID,
    ) -> None:
        """Drop from the writer's cache scope the texts of replaced chunks that no new chunk uses, so
        that deleting the document later leaves none of its earlier versions behind (the trigger of
        migration 020 erases what its chunks reference then). After the write; should a bulk load roll
        back, the old chunks' texts are embedded again by their next change (cost only)."""
        kept = {c.embed_hash for d in changed for c in d.chunks}
        replaced = {h for d in changed if (old := existing.get(d.external_id)) for h in old.embed_hashes}
        forget_embeddings(self.db.pool, scope=scope, hashes=replaced - kept)

    def _embeddings(
        self,
        chunks: Sequence[PreparedChunk],
        summary: IngestSummary,
        scope: uuid.UUID,
        counter: ChunkCounter,
    ) -> dict[str, np.ndarray]:
        """Vectors for every chunk: from the writer's cache scope or the shared one, else from the
        provider (then cached in the writer's scope)."""
        wanted = {c.embed_hash: c.embed_text for c in chunks}
        uses = Counter(c.embed_hash for c in chunks)  # chunks per text (equal texts are embedded once)
        # The cache is the backend's own (migrations 013, 020): read and written on the backend's pool,
        # never as a user, in the scopes this writer may see.
        vectors, embedded = embed_with_cache(
            self.db.pool,
            self.embedder,
            wanted,
            scope=scope,
            batch_size=self.settings.ingest_embed_batch_size,
            on_vectors=lambda hashes: counter.add(sum(uses[h] for h in hashes)),
        )
        summary.chunks_embedded += len(embedded)
        summary.chunks_from_cache += len(chunks) - sum(1 for c in chunks if c.embed_hash in embedded)
        return vectors

    @staticmethod
    def _failed(doc: PreparedDocument, reason: str) -> DocumentOutcome:
        return DocumentOutcome(doc.external_id, doc.title, doc.source, "failed", error=reason)


def _moved_out(
    changed: list[PreparedDocument],
    existing: dict[str, documents_repo.ExistingDocument],
    collection_id: uuid.UUID | None,
) -> list[uuid.UUID]:
    """The documents a re-ingestion naming collection_id moves out of another collection."""
    olds = [existing.get(d.external_id) for d in changed]
    return [o.id for o in olds if collection_id and o and o.collection_id not in (None, collection_id)]
