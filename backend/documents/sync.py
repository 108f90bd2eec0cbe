"""Make the store match a source (a folder, a URL list): new and changed entries ingested, unchanged
ones skipped (content hash), vanished ones removed when asked.

The source's documents are those whose external_id starts with its prefix (`<name>/`). A dry run
prepares every entry and compares it with what is stored, writing nothing. Applying ingests group by
group (each group one transaction, as `ingest` does), then deletes what vanished: a run interrupted at
any point leaves whole documents only, and the next run continues where it stopped (what was stored is
unchanged by then). An entry that cannot be read now is reported and its stored documents are kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from backend.auth.identity import Identity
from backend.db.database import Database
from backend.db.repositories import document_sync, erasure
from backend.db.repositories import documents as documents_repo
from backend.documents.ingestion import IngestionService
from backend.documents.outcomes import ProgressCallback
from backend.documents.sync_sources import SyncItem, Unreadable
from backend.errors import DomainError
from backend.ingest.documents import LoadedDocument
from backend.ingest.prepare import PreparedDocument

COMPARE_BATCH = 200  # documents prepared and compared per read in a dry run


@dataclass
class SyncReport:
    applied: bool
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # removed, or would be with --apply
    vanished_kept: list[str] = field(default_factory=list)  # vanished, kept without --delete
    failed: list[tuple[str, str]] = field(default_factory=list)  # (external_id, why)

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.updated) + len(self.removed)


def sync(
    ingestion: IngestionService,
    db: Database,
    items: Iterable[SyncItem],
    *,
    prefix: str,
    identity: Identity | None,
    delete: bool,
    apply: bool,
    on_progress: ProgressCallback | None = None,
) -> SyncReport:
    """Compare (apply=False) or make the store match (apply=True) the source's items under `prefix`."""
    report = SyncReport(applied=apply)
    seen: set[str] = set()
    unreadable: list[str] = []
    documents = _sorting(items, report, seen, unreadable)
    if apply:
        _ingest(ingestion, documents, identity, report, on_progress)
    else:
        _compare(ingestion, db, documents, identity, report)
    owner_id = identity.user_id if identity is not None else None
    with db.owner() if identity is None else db.as_user(identity) as conn:
        stored = document_sync.external_ids_with_prefix(conn, owner_id=owner_id, prefix=prefix)
    vanished = {
        ident: doc_id
        for ident, doc_id in stored.items()
        if ident not in seen and not any(ident == u or ident.startswith(u + "#") for u in unreadable)
    }
    _remove(db, identity, vanished, report, delete=delete, apply=apply)
    return report


def _sorting(
    items: Iterable[SyncItem], report: SyncReport, seen: set[str], unreadable: list[str]
) -> Iterator[LoadedDocument]:
    """The readable documents; unreadable entries go to the report (and are protected from removal)."""
    for item in items:
        if isinstance(item, Unreadable):
            report.failed.append((item.external_id, item.reason))
            unreadable.append(item.external_id)
            continue
        assert item.external_id is not None
        seen.add(item.external_id)
        yield item


def _ingest(
    ingestion: IngestionService,
    documents: Iterator[LoadedDocument],
    identity: Identity | None,
    report: SyncReport,
    on_progress: ProgressCallback | None,
) -> None:
    summary = ingestion.ingest(documents, identity=identity, on_progress=on_progress)
    lists = {"created": report.added, "updated": report.updated, "unchanged": report.unchanged}
    for outcome in summary.outcomes:
        if outcome.status == "failed":
            report.failed.append((outcome.external_id, outcome.error or "failed"))
        else:
            lists[outcome.status].append(outcome.external_id)


def _compare(
    ingestion: IngestionService,
    db: Database,
    documents: Iterator[LoadedDocument],
    identity: Identity | None,
    report: SyncReport,
) -> None:
    """What applying would do, batch by batch, writing nothing."""
    owner_id = identity.user_id if identity is not None else None
    model = ingestion.embedder.model_id
    while batch := list(islice(documents, COMPARE_BATCH)):
        prepared: list[PreparedDocument] = []
        for doc in batch:
            try:
                prepared.append(ingestion.prepare(doc))
            except DomainError as exc:
                report.failed.append((doc.external_id or doc.source, str(exc)))
        with db.owner() if identity is None else db.as_user(identity, read_only=True) as conn:
            existing = documents_repo.find_existing(
                conn, owner_id=owner_id, external_ids=[p.external_id for p in prepared]
            )
        for ready in prepared:
            old = existing.get(ready.external_id)
            if old is None:
                report.added.append(ready.external_id)
            elif ingestion.is_unchanged(ready, old, model):
                report.unchanged.append(ready.external_id)
            else:
                report.updated.append(ready.external_id)


def _remove(
    db: Database,
    identity: Identity | None,
    vanished: dict[str, uuid.UUID],
    report: SyncReport,
    *,
    delete: bool,
    apply: bool,
) -> None:
    names = sorted(vanished)
    if not delete:
        report.vanished_kept.extend(names)
        return
    report.removed.extend(names)
    if apply and vanished:
        owner_id = identity.user_id if identity is not None else None
        with db.owner() if identity is None else db.as_user(identity) as conn:
            deleted = document_sync.delete_documents(conn, owner_id=owner_id, ids=list(vanished.values()))
            erasure.queue_erasure(conn, ids=deleted.shared)
        if deleted.shared:
            with db.owner() if identity is None else db.as_user(identity) as conn:
                erasure.erase_copies_elsewhere(conn, ids=deleted.shared)
