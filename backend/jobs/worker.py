"""The worker: claim a queued file, ingest it as the job's owner, record how it ended.

Claims, leases and progress are the queue's bookkeeping and run as the backend's own role (the queue
spans every user); the file's body is read, and its documents written, as the identity of the request
that submitted it, so row-level security decides exactly as it did for that request. Ingesting a file
is one transaction (IngestionService atomic) and idempotent by content hash: a file retried after its
worker died is stored once, the second run finding it unchanged.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from backend.auth.identity import DatabaseRole, Identity
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import ingest_jobs as repo
from backend.documents.ingestion import IngestionService
from backend.documents.outcomes import IngestSummary
from backend.errors import DomainError
from backend.ingest.sandbox import ParseLimits
from backend.jobs.files import documents_of

logger = logging.getLogger(__name__)


@dataclass
class Lease:
    """A claimed file's lease, renewed by a heartbeat thread until the file ends."""

    db: Database
    claim: repo.Claim
    lease_s: float

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="pgrag-ingest-lease", daemon=True)

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                with self.db.owner() as conn:
                    held = repo.renew_lease(
                        conn, file_id=self.claim.file_id, token=self.claim.token, lease_s=self.lease_s
                    )
            except psycopg.Error as exc:  # the database is away: the lease may run out, the file is retried
                logger.warning("ingest job file %s: lease not renewed: %s", self.claim.file_id, exc)
                continue
            if not held:
                return


class Worker:
    """Works the queue one file at a time; `name` appears in the claim tokens (which worker holds what)."""

    def __init__(self, db: Database, ingestion: IngestionService, settings: Settings, name: str = "") -> None:
        self.db = db
        self.ingestion = ingestion
        self.settings = settings
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"

    def run_once(self) -> bool:
        """Claim and ingest one file; False when nothing was waiting."""
        claim = self.claim()
        if claim is None:
            return False
        self.process(claim)
        return True

    def run(self, stop: threading.Event, wake: threading.Event | None = None) -> None:
        """Work until `stop` is set; idle, wait INGEST_WORKER_POLL_S (or until `wake`)."""
        while not stop.is_set():
            try:
                busy = self.run_once()
            except psycopg.Error as exc:  # the database is away: try again later, nothing is lost
                logger.warning("ingest worker %s: %s", self.name, exc)
                busy = False
            if not busy:
                (wake or stop).wait(self.settings.ingest_worker_poll_s)
                if wake is not None:
                    wake.clear()

    def drain(self) -> int:
        """Work until the queue is empty; how many files were processed."""
        count = 0
        while self.run_once():
            count += 1
        return count

    def claim(self) -> repo.Claim | None:
        token = f"{self.name}:{uuid.uuid4().hex[:12]}"
        with self.db.owner() as conn, conn.transaction():
            repo.fail_abandoned(conn, max_attempts=self.settings.ingest_job_max_attempts)
            return repo.claim_next(conn, token=token, lease_s=self.settings.ingest_job_lease_s)

    def process(self, claim: repo.Claim) -> None:
        """Ingest the claimed file as its job's owner and record done or failed with the reason."""
        with Lease(self.db, claim, self.settings.ingest_job_lease_s):
            try:
                summary = self._ingest(claim)
            except DomainError as exc:
                self._finish(claim, "failed", error=str(exc))
                return
            except psycopg.Error:
                raise  # the database: the lease runs out and the file is retried
            except Exception as exc:  # a defect: reported on the file, logged with its trace
                logger.exception("ingest job file %s failed", claim.file_id)
                self._finish(claim, "failed", error=f"could not be ingested ({type(exc).__name__})")
                return
        failed = summary.failures
        if failed:
            self._finish(claim, "failed", error="; ".join(f"{f.external_id}: {f.error}" for f in failed))
        else:
            self._finish(claim, "done", outcome=outcome(summary))

    def _ingest(self, claim: repo.Claim) -> IngestSummary:
        identity = identity_of(claim)
        with self.db.as_user(identity, read_only=True) as conn:
            body = repo.read_body(conn, file_id=claim.file_id)
        if body is None:
            raise DomainError("the file's content is gone (was the job cancelled?)")
        items = documents_of(
            claim.kind,
            body,
            claim.filename,
            claim.content_type,
            ParseLimits.from_settings(self.settings),
            claim.external_id,
        )
        return self.ingestion.ingest(
            items,
            identity=identity,
            atomic=True,
            on_chunks=self._progress(claim),
            collection_id=claim.collection_id,
        )

    def _progress(self, claim: repo.Claim) -> Callable[[int, int], None]:
        def record(done: int, total: int) -> None:
            with self.db.owner() as conn:
                repo.record_progress(conn, file_id=claim.file_id, token=claim.token, done=done, total=total)

        return record

    def _finish(self, claim: repo.Claim, status: str, **fields: Any) -> None:
        with self.db.owner() as conn:
            if not repo.finish(conn, file_id=claim.file_id, token=claim.token, status=status, **fields):
                logger.warning("ingest job file %s: claim lost before it ended", claim.file_id)


def identity_of(claim: repo.Claim) -> Identity:
    """The identity the job was submitted as (migration 026: owner, role and claims of that request)."""
    if claim.run_as not in ("authenticated", "service_role"):
        raise DomainError(f"job {claim.job_id} runs as an unknown role")
    role: DatabaseRole = "authenticated" if claim.run_as == "authenticated" else "service_role"
    return Identity(user_id=claim.owner_id, role=role, claims=claim.claims)


def outcome(summary: IngestSummary) -> dict[str, Any]:
    """What a done file stored: counts, and each document's id, status and chunks."""
    return {
        "counts": summary.counts,
        "documents": [
            {
                "external_id": o.external_id,
                "title": o.title,
                "status": o.status,
                "document_id": str(o.document_id) if o.document_id else None,
                "chunks": o.chunks,
            }
            for o in summary.outcomes
        ],
        "chunks_embedded": summary.chunks_embedded,
        "chunks_from_cache": summary.chunks_from_cache,
    }


class WorkerThreads:
    """INGEST_WORKERS workers inside the API process, started and stopped with the app."""

    def __init__(self, make_worker: Callable[[int], Worker], count: int) -> None:
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads = [
            threading.Thread(
                target=make_worker(i).run,
                args=(self._stop, self._wake),
                name=f"pgrag-ingest-{i}",
                daemon=True,
            )
            for i in range(count)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        """A job was queued: an idle worker looks now rather than at its next poll."""
        self._wake.set()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask every worker to stop; a file still being ingested is retried by the next worker that
        finds its lease run out (nothing half-stored: its transaction never committed)."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout_s)
