"""Background ingestion jobs (migration 026): what a user submits and reads under RLS, and what workers
claim, renew and finish as the backend's own role (the queue spans every user).

Every worker statement names the claim token it holds (`worker`): a worker whose lease ran out and whose
file was claimed again changes nothing any more.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

_FILE_COLUMNS = (
    "f.id, f.position, f.filename, f.content_type, f.status, f.error, f.chunks_total, f.chunks_done, "
    "f.outcome, f.attempts, f.started_at, f.finished_at"
)


@dataclass(frozen=True)
class NewFile:
    filename: str
    content_type: str | None
    body: bytes
    external_id: str | None = None  # the document this file is a new version of (migration 028)


@dataclass(frozen=True)
class Claim:
    """A file a worker holds: who the job runs as and what the file is (its body is read as that user)."""

    file_id: uuid.UUID
    job_id: uuid.UUID
    kind: str
    collection_id: uuid.UUID | None
    filename: str
    external_id: str | None
    content_type: str | None
    attempts: int
    owner_id: uuid.UUID | None
    run_as: str
    claims: dict[str, Any]
    token: str


# --- as the caller (RLS) --------------------------------------------------------------------------


def create_job(
    conn: psycopg.Connection, *, kind: str, files: Sequence[NewFile], collection_id: uuid.UUID | None = None
) -> uuid.UUID:
    """A job and its queued files; owner, role and claims come from the transaction (column defaults)."""
    row = conn.execute(
        "insert into ingest_jobs (kind, collection_id) values (%s, %s) returning id", (kind, collection_id)
    ).fetchone()
    assert row is not None
    job_id: uuid.UUID = row[0]
    with conn.cursor() as cur:
        cur.executemany(
            "insert into ingest_job_files (job_id, position, filename, content_type, body, external_id) "
            "values (%s, %s, %s, %s, %s, %s)",
            [(job_id, i, f.filename, f.content_type, f.body, f.external_id) for i, f in enumerate(files)],
        )
    return job_id


def get_job(conn: psycopg.Connection, *, job_id: uuid.UUID) -> dict[str, Any] | None:
    """The job with its files (no bodies), or None when the caller cannot see it."""
    with conn.cursor(row_factory=dict_row) as cur:
        job = cur.execute(
            "select id, kind, collection_id, created_at from ingest_jobs where id = %s", (job_id,)
        ).fetchone()
        if job is None:
            return None
        job["files"] = cur.execute(
            "select " + _FILE_COLUMNS + " from ingest_job_files f where f.job_id = %s order by f.position",
            (job_id,),
        ).fetchall()
    return job


def list_jobs(conn: psycopg.Connection, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The caller's jobs, newest first, each with its files; and how many there are."""
    row = conn.execute("select count(*) from ingest_jobs").fetchone()
    total = int(row[0]) if row else 0
    ids = [
        r[0]
        for r in conn.execute(
            "select id from ingest_jobs order by created_at desc, id limit %s offset %s", (limit, offset)
        ).fetchall()
    ]
    jobs = [job for job_id in ids if (job := get_job(conn, job_id=job_id)) is not None]
    return jobs, total


def cancel_queued(conn: psycopg.Connection, *, job_id: uuid.UUID) -> int:
    """Cancel the job's files no worker has started; how many were cancelled."""
    cur = conn.execute(
        "update ingest_job_files set status = 'cancelled', finished_at = now(), body = null "
        "where job_id = %s and status = 'queued'",
        (job_id,),
    )
    return cur.rowcount


def read_body(conn: psycopg.Connection, *, file_id: uuid.UUID) -> bytes | None:
    row = conn.execute("select body from ingest_job_files where id = %s", (file_id,)).fetchone()
    return None if row is None or row[0] is None else bytes(row[0])


# --- as the backend's own role (workers) ----------------------------------------------------------


def fail_abandoned(conn: psycopg.Connection, *, max_attempts: int) -> int:
    """Fail the files whose lease ran out after their last allowed attempt (workers kept stopping)."""
    cur = conn.execute(
        "update ingest_job_files set status = 'failed', finished_at = now(), body = null, "
        "lease_until = null, "
        "error = format('not ingested: the worker stopped while ingesting it, %%s times', attempts) "
        "where status = 'running' and lease_until < now() and attempts >= %s",
        (max_attempts,),
    )
    return cur.rowcount


def claim_next(conn: psycopg.Connection, *, token: str, lease_s: float) -> Claim | None:
    """Claim the oldest queued file, or a running one whose worker's lease ran out (it died)."""
    row = conn.execute(
        """
        with next as (
            select f.id from ingest_job_files f
            where f.status = 'queued' or (f.status = 'running' and f.lease_until < now())
            order by f.created_at, f.position
            limit 1
            for update skip locked
        )
        update ingest_job_files f
        set status = 'running', attempts = f.attempts + 1, worker = %(token)s,
            lease_until = now() + make_interval(secs => %(lease_s)s), started_at = now()
        from next, ingest_jobs j
        where f.id = next.id and j.id = f.job_id
        returning f.id, f.job_id, j.kind, j.collection_id, f.filename, f.external_id, f.content_type,
            f.attempts, j.owner_id, j.run_as, j.claims
        """,
        {"token": token, "lease_s": lease_s},
    ).fetchone()
    if row is None:
        return None
    file_id, job_id, kind, collection_id, filename, external_id, content_type, attempts, *who = row
    owner_id, run_as, claims = who
    return Claim(
        file_id, job_id, kind, collection_id, filename, external_id, content_type, attempts, owner_id, run_as,
        claims, token,
    )  # fmt: skip


def renew_lease(conn: psycopg.Connection, *, file_id: uuid.UUID, token: str, lease_s: float) -> bool:
    """Extend the lease; False when the file is no longer this claim's."""
    cur = conn.execute(
        "update ingest_job_files set lease_until = now() + make_interval(secs => %s) "
        "where id = %s and worker = %s and status = 'running'",
        (lease_s, file_id, token),
    )
    return cur.rowcount == 1


def record_progress(
    conn: psycopg.Connection, *, file_id: uuid.UUID, token: str, done: int, total: int
) -> None:
    conn.execute(
        "update ingest_job_files set chunks_done = %s, chunks_total = %s "
        "where id = %s and worker = %s and status = 'running'",
        (done, total, file_id, token),
    )


def finish(
    conn: psycopg.Connection,
    *,
    file_id: uuid.UUID,
    token: str,
    status: str,
    error: str | None = None,
    outcome: dict[str, Any] | None = None,
) -> bool:
    """End the file (done or failed) and drop its body; False when the claim was lost meanwhile."""
    cur = conn.execute(
        "update ingest_job_files set status = %s, error = %s, outcome = %s, finished_at = now(), "
        "body = null, lease_until = null, "
        "chunks_done = case when %s = 'done' then coalesce(chunks_total, chunks_done) else chunks_done end "
        "where id = %s and worker = %s and status = 'running'",
        (status, error, None if outcome is None else Jsonb(outcome), status, file_id, token),
    )
    return cur.rowcount == 1
