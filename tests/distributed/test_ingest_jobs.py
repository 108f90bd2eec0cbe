"""tests/test_ingest_jobs.py, unchanged, against the cluster: the job queue (ingest_jobs,
ingest_job_files) stays on the coordinator, where a worker claims files of every tenant with FOR UPDATE
SKIP LOCKED, and writes each file's documents as its owner, to the owner's shard. One more test: one
worker drains the jobs of two users and the service path in one pass, and each document lands in its
owner's tenant."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.api.app import create_app
from tests.auth_tokens import SERVICE_KEY
from tests.test_ingest_jobs import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
from tests.test_ingest_jobs import A, B, upload, worker

PUBLIC_TENANT = "00000000-0000-0000-0000-000000000000"


def test_one_worker_claims_the_jobs_of_every_tenant_and_writes_each_to_its_owners_shard(two_users, db):
    services, a, b = two_users
    service = TestClient(create_app(services=services), headers={"Authorization": f"Bearer {SERVICE_KEY}"})
    jobs = {
        "a": (a, upload(a, ("a.md", b"# A notes\n\nPurple sweet potato cheesecake."))),
        "b": (b, upload(b, ("b.md", b"# B notes\n\nHoney lemon tea."), ("b2.txt", b"Green tea latte."))),
        "service": (service, upload(service, ("handbook.md", b"# Handbook\n\nFifteen days of paid leave."))),
    }
    queued = db.execute(
        "select count(distinct j.owner_id), count(*) from ingest_job_files f "
        "join ingest_jobs j on j.id = f.job_id where f.status = 'queued'"
    ).fetchone()
    assert queued == (2, 4)  # A's and B's jobs (the service's has no owner), four files: one queue

    assert worker(services).drain() == 4  # one worker, one pass, every tenant's files

    for client, accepted in jobs.values():
        assert {f["status"] for f in client.get(accepted["status_url"]).json()["files"]} == {"done"}
    placed = db.execute(
        "select title, tenant_id::text, coalesce(owner_id::text, '') from documents order by title"
    ).fetchall()
    assert placed == [
        ("A notes", str(A), str(A)),
        ("B notes", str(B), str(B)),
        ("Handbook", PUBLIC_TENANT, ""),
        ("b2", str(B), str(B)),
    ]
    assert {d["title"] for d in a.get("/documents").json()["items"]} == {"A notes", "Handbook"}
    assert {d["title"] for d in b.get("/documents").json()["items"]} == {"B notes", "b2", "Handbook"}
