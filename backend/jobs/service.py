"""Background ingestion jobs as their owner sees them: submit, read, list, cancel, follow.

Every statement runs as the caller (RLS: a user sees their own jobs only; another user's job id is
"does not exist"). A job's status is derived from its files: queued while none has started, running
while any is queued or running, done once every file ended (done, failed or cancelled).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from backend.auth.identity import Identity
from backend.collections.service import require_role
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import ingest_jobs as repo
from backend.errors import InvalidInput, NotFound

FILE_STATUSES = ("queued", "running", "done", "failed", "cancelled")
ENDED = frozenset({"done", "failed", "cancelled"})
HEARTBEAT_S = 15.0


class JobsService:
    """Submitting and reading jobs; `on_submit` wakes the API process's workers (when it runs any)."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.on_submit: Callable[[], None] | None = None

    def submit(
        self,
        *,
        identity: Identity,
        kind: str,
        files: list[repo.NewFile],
        collection_id: uuid.UUID | None = None,
    ) -> dict[str, Any]:
        """Queue the files as one job of the caller's (into a team collection the caller edits); the job
        as GET /ingest/jobs/{id} shows it. A collection the caller cannot add to is refused now, not
        file by file later."""
        with self.db.as_user(identity) as conn:
            if collection_id is not None:
                if identity.user_id is None:
                    raise InvalidInput("collections hold users' documents: sign in as a user to add to one")
                require_role(conn, identity, collection_id, "editor")
            job_id = repo.create_job(conn, kind=kind, files=files, collection_id=collection_id)
            job = repo.get_job(conn, job_id=job_id)
        assert job is not None
        if self.on_submit:
            self.on_submit()
        return describe(job)

    def read_job(self, *, identity: Identity, job_id: uuid.UUID) -> dict[str, Any]:
        with self.db.as_user(identity, read_only=True) as conn:
            job = repo.get_job(conn, job_id=job_id)
        if job is None:
            raise NotFound(f"ingest job {job_id} does not exist")
        return describe(job)

    def list_jobs(self, *, identity: Identity, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        with self.db.as_user(identity, read_only=True) as conn:
            jobs, total = repo.list_jobs(conn, limit=limit, offset=offset)
        return [describe(j) for j in jobs], total

    def cancel_job(self, *, identity: Identity, job_id: uuid.UUID) -> dict[str, Any]:
        """Cancel the job's queued files (those being ingested finish); the job afterwards."""
        with self.db.as_user(identity) as conn:
            if repo.get_job(conn, job_id=job_id) is None:
                raise NotFound(f"ingest job {job_id} does not exist")
            repo.cancel_queued(conn, job_id=job_id)
            job = repo.get_job(conn, job_id=job_id)
        assert job is not None
        return describe(job)

    async def events(self, *, identity: Identity, job_id: uuid.UUID) -> AsyncIterator[dict[str, Any]]:
        """The job each time it changes (event `job`), until it is done; NotFound before the first."""
        last: dict[str, Any] | None = None
        quiet_since = time.monotonic()
        while True:
            job = await asyncio.to_thread(self.read_job, identity=identity, job_id=job_id)
            if job != last:
                yield {"type": "job", **job}
                last, quiet_since = job, time.monotonic()
            elif time.monotonic() - quiet_since > HEARTBEAT_S:
                yield {"type": "heartbeat"}
                quiet_since = time.monotonic()
            if job["status"] == "done":
                return
            await asyncio.sleep(self.settings.ingest_job_events_poll_s)


def describe(job: dict[str, Any]) -> dict[str, Any]:
    """The job with its status, counts per file status and chunk progress over its files."""
    files = job["files"]
    counts = {s: sum(1 for f in files if f["status"] == s) for s in FILE_STATUSES}
    if all(f["status"] in ENDED for f in files):
        status = "done"
    elif counts["queued"] == len(files):
        status = "queued"
    else:
        status = "running"
    return {
        "id": job["id"],
        "kind": job["kind"],
        "collection_id": job["collection_id"],
        "created_at": job["created_at"],
        "status": status,
        "counts": counts,
        "chunks_done": sum(f["chunks_done"] for f in files),
        "chunks_total": sum(f["chunks_total"] or 0 for f in files),
        "files": files,
    }
