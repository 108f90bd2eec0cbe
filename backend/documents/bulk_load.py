"""Bulk mode: chunk index maintenance and term statistics deferred to the end of one transaction."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from backend.config import Settings
from backend.db.repositories import bulk_load as bulk_repo

# Index access methods whose maintenance bulk mode defers. HNSW inserts dominate a COPY; deferring
# GIN too took 20k chunks on 2 cores from 5.4 to 3.6 s of load for 1.0 s more of builds (bench/ingest.py).
BULK_DEFERRED_INDEX_METHODS = ("hnsw", "gin")


@dataclass
class BulkLoadStats:
    """What bulk mode deferred to the end of the load, and what catching up took."""

    deferred_indexes: list[str]
    term_stats_seconds: float = 0.0
    index_build_seconds: float = 0.0
    analyze_seconds: float = 0.0


class BulkLoad:
    """Index maintenance and term statistics deferred to the end of the caller's transaction.

    start() before each write drops the indexes the first time, not earlier: a re-run with nothing
    changed locks nothing and rebuilds nothing. finish() catches up, before the commit.
    """

    def __init__(
        self,
        conn: psycopg.Connection,
        settings: Settings,
        *,
        methods: Sequence[str] = BULK_DEFERRED_INDEX_METHODS,
    ) -> None:
        self.conn = conn
        self.methods = tuple(methods)
        self.deferred: list[bulk_repo.DeferredIndex] | None = None
        # First, so that a bad setting fails before any work and no timeout cuts the load short.
        bulk_repo.configure_bulk_transaction(
            conn,
            maintenance_work_mem=settings.ingest_bulk_maintenance_work_mem,
            parallel_workers=settings.ingest_bulk_parallel_workers,
        )

    def start(self) -> None:
        if self.deferred is None:
            self.deferred = bulk_repo.defer_chunk_indexes(self.conn, methods=self.methods)

    def finish(self) -> BulkLoadStats | None:
        """Refresh term statistics, rebuild the indexes, analyze; None when nothing was written."""
        if self.deferred is None:
            return None
        stats = BulkLoadStats([i.name for i in self.deferred])
        started = time.perf_counter()
        bulk_repo.refresh_term_stats(self.conn)
        stats.term_stats_seconds = time.perf_counter() - started
        started = time.perf_counter()
        bulk_repo.rebuild_chunk_indexes(self.conn, self.deferred)
        stats.index_build_seconds = time.perf_counter() - started
        started = time.perf_counter()
        bulk_repo.analyze_documents_and_chunks(self.conn)
        stats.analyze_seconds = time.perf_counter() - started
        return stats
