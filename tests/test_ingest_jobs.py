"""Background ingestion jobs (issue 29, item 3): uploads answered at once with a job id, worked by a
worker as the job's owner, with per-file status, errors and progress; a worker that dies mid-way is
replaced without duplicates; another user's job does not exist for them (API and SQL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import psycopg.sql
import pytest
from fastapi.testclient import TestClient

from backend import PROJECT_ROOT
from backend.api.app import create_app
from backend.auth import LOCAL_IDENTITY, user_identity
from backend.cli import main
from backend.config import get_settings
from backend.jobs.worker import Worker
from backend.testing import ScriptedLLM
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.factories import acting_as
from tests.fake_http import serve

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
LONG = "袋鼠生活在澳大利亚南部的岛屿上，以草为食。Kangaroos graze on the southern islands. " * 40


def upload(client: TestClient, *files: tuple[str, bytes], background: bool = True) -> dict:
    response = client.post(
        "/documents/upload",
        params={"background": str(background).lower()},
        files=[("files", (name, data, "application/octet-stream")) for name, data in files],
    )
    assert response.status_code == (202 if background else 200), response.text
    return response.json()


def worker(services, name: str = "test") -> Worker:
    return Worker(services.db, services.ingestion, services.settings, name=name)


def expire_leases(db) -> None:
    db.execute(
        "update ingest_job_files set lease_until = now() - interval '1 second' where status = 'running'"
    )


def test_an_upload_with_background_answers_at_once_and_a_worker_ingests_it(client, services):
    accepted = upload(
        client, ("kangaroo.md", f"# 袋鼠\n\n{LONG}".encode()), ("note.txt", b"koala eucalyptus")
    )
    assert [f["filename"] for f in accepted["files"]] == ["kangaroo.md", "note.txt"]
    assert {f["status"] for f in accepted["files"]} == {"queued"}
    job = client.get(accepted["status_url"]).json()
    assert job["status"] == "queued"
    assert client.get("/documents").json()["total"] == 0  # nothing stored before a worker runs

    assert worker(services).drain() == 2

    job = client.get(f"/ingest/jobs/{accepted['job_id']}").json()
    assert job["status"] == "done"
    assert job["counts"]["done"] == 2
    first = job["files"][0]
    assert first["chunks_total"] > 1
    assert first["chunks_done"] == first["chunks_total"]
    assert first["outcome"]["documents"][0]["status"] == "created"
    hits = client.post("/search", json={"query": "袋鼠 澳大利亚"}).json()["results"]
    assert hits
    assert hits[0]["title"] == "袋鼠"
    assert client.get("/ingest/jobs").json()["total"] == 1


def test_a_bad_file_fails_alone_with_its_reason(client, services):
    accepted = upload(
        client,
        ("good.md", b"# Good\n\nplatypus lay eggs"),
        ("broken.pdf", b"%PDF-1.4 this is not a pdf at all"),
        ("tool.exe", b"MZ\x00\x01binary"),
    )
    worker(services).drain()
    files = client.get(accepted["status_url"]).json()["files"]
    assert [f["status"] for f in files] == ["done", "failed", "failed"]
    assert files[0]["error"] is None
    assert files[1]["error"].startswith("cannot read PDF (damaged or not a PDF)")
    assert files[2]["error"] == "unsupported type .exe"
    assert [d["title"] for d in client.get("/documents").json()["items"]] == ["Good"]


def test_a_worker_that_died_holding_a_file_is_replaced_and_nothing_is_stored_twice(client, services, db):
    accepted = upload(client, ("kangaroo.md", f"# 袋鼠\n\n{LONG}".encode()))
    dead = worker(services, "dead")
    claim = dead.claim()
    assert claim is not None
    # It died after its transaction committed the documents, before it could record the file as done.
    dead._ingest(claim)
    chunks = db.execute("select count(*) from chunks").fetchone()[0]
    assert worker(services, "alive").drain() == 0  # its lease still holds: nobody takes the file over
    expire_leases(db)

    assert worker(services, "alive").drain() == 1
    file = client.get(accepted["status_url"]).json()["files"][0]
    assert file["status"] == "done"
    assert file["attempts"] == 2
    assert file["outcome"]["documents"][0]["status"] == "unchanged"
    assert db.execute("select count(*) from documents").fetchone()[0] == 1
    assert db.execute("select count(*) from chunks").fetchone()[0] == chunks
    # The dead worker's late report changes nothing: the file is no longer its claim.
    dead._finish(claim, "failed", error="late")
    assert client.get(accepted["status_url"]).json()["files"][0]["status"] == "done"


def test_a_file_whose_workers_keep_dying_fails_after_the_last_attempt(make_services, db):
    services = make_services(ingest_job_max_attempts=2)
    client = TestClient(create_app(services=services))
    accepted = upload(client, ("a.md", b"# A\n\ntext"))
    for _ in range(2):
        assert worker(services).claim() is not None
        expire_leases(db)
    assert worker(services).drain() == 0
    file = client.get(accepted["status_url"]).json()["files"][0]
    assert file["status"] == "failed"
    assert "worker stopped while ingesting it, 2 times" in file["error"]


def test_cancel_stops_queued_files_only(client, services):
    accepted = upload(client, ("a.md", b"# A\n\none"), ("b.md", b"# B\n\ntwo"))
    running = worker(services).claim()  # a.md has started
    assert running is not None
    job = client.delete(accepted["status_url"]).json()
    assert [f["status"] for f in job["files"]] == ["running", "cancelled"]
    worker(services).process(running)
    assert worker(services).drain() == 0
    job = client.get(accepted["status_url"]).json()
    assert job["status"] == "done"
    assert job["counts"] == {
        "queued": 0,
        "running": 0,
        "done": 1,
        "failed": 0,
        "cancelled": 1,
    }
    assert [d["title"] for d in client.get("/documents").json()["items"]] == ["A"]


@pytest.mark.parametrize("background", [False, True])
def test_a_new_version_of_a_file_named_by_its_external_id_updates_that_document_in_place(
    client, services, background
):
    """Re-ingesting a changed file with the document's external_id keeps the document (same id, now
    "updated") instead of storing a second one under the new content's hash."""

    def send(text: str, **form: str) -> dict:
        response = client.post(
            "/documents/upload",
            params={"background": str(background).lower()},
            data=form,
            files=[("files", ("notes.md", text.encode(), "text/markdown"))],
        )
        assert response.status_code == (202 if background else 200), response.text
        if not background:
            return response.json()["documents"][0]
        assert worker(services).drain() == 1
        job = client.get(response.json()["status_url"]).json()
        assert job["files"][0]["status"] == "done", job
        return job["files"][0]["outcome"]["documents"][0]

    first = send("# 笔记\n\n袋鼠吃草。")
    second = send("# 笔记\n\n袋鼠吃草，也吃灌木的叶子。", external_id=first["external_id"])
    assert (second["document_id"], second["status"]) == (first["document_id"], "updated")
    listed = client.get("/documents").json()
    assert listed["total"] == 1
    hits = client.post("/search", json={"query": "袋鼠 灌木 叶子"}).json()["results"]
    assert "灌木" in hits[0]["content"]


def test_an_external_id_names_one_file_of_one_document(client):
    two = client.post(
        "/documents/upload",
        data={"external_id": "notes"},
        files=[
            ("files", ("a.md", b"# A\n\nalpha", "text/markdown")),
            ("files", ("b.md", b"# B\n\nbeta", "text/markdown")),
        ],
    )
    assert two.status_code == 422, two.text
    assert "one file" in two.json()["detail"]
    rows = b'{"_id": "a", "title": "a", "text": "alpha"}\n{"_id": "b", "title": "b", "text": "beta"}\n'
    many = client.post(
        "/documents/upload",
        data={"external_id": "notes"},
        files=[("files", ("rows.jsonl", rows, "application/jsonl"))],
    )
    assert many.status_code == 200, many.text
    assert many.json()["documents"][0]["status"] == "failed"
    assert "holds 2" in many.json()["documents"][0]["error"]
    assert client.get("/documents").json()["total"] == 0  # nothing stored


def test_a_background_batch_stays_all_or_nothing(client, services):
    docs = [
        {"external_id": "k", "title": "袋鼠", "content": "袋鼠生活在澳洲。"},
        {"external_id": "q", "title": "考拉", "content": "考拉吃桉树叶。"},
    ]
    response = client.post("/documents/batch", params={"background": "true"}, json={"documents": docs})
    assert response.status_code == 202, response.text
    worker(services).drain()
    job = client.get(response.json()["status_url"]).json()
    assert job["kind"] == "batch"
    assert job["status"] == "done"
    assert job["files"][0]["outcome"]["counts"]["created"] == 2
    assert client.get("/documents").json()["total"] == 2


def sse_events(response) -> list[tuple[str, dict]]:
    frames = [f for f in "".join(response.iter_text()).split("\n\n") if f and not f.startswith(":")]
    return [
        (f.split("\n")[0].removeprefix("event: "), json.loads(f.split("\n")[1].removeprefix("data: ")))
        for f in frames
    ]


def test_the_event_stream_follows_the_api_process_workers_to_the_end(make_services):
    services = make_services(ingest_workers=1, ingest_worker_poll_s=0.05, ingest_job_events_poll_s=0.02)
    with TestClient(create_app(services=services)) as client:
        accepted = upload(client, ("kangaroo.md", f"# 袋鼠\n\n{LONG}".encode()), ("b.md", b"# B\n\ntwo"))
        with client.stream("GET", accepted["events_url"]) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse_events(response)
    assert {name for name, _ in events} == {"job"}
    assert events[-1][1]["status"] == "done"
    assert events[-1][1]["chunks_done"] == events[-1][1]["chunks_total"] > 0
    assert [f["status"] for f in events[-1][1]["files"]] == ["done", "done"]
    assert len(events) >= 2  # the stream spoke before the end too
    assert client.get("/documents").json()["total"] == 2
    assert events[-1][1] == client.get(accepted["status_url"]).json()  # the same shape as the GET


def test_the_event_stream_of_an_unknown_job_is_a_404(client):
    assert client.get(f"/ingest/jobs/{uuid.uuid4()}/events").status_code == 404


def rows(conn: psycopg.Connection, table: str) -> int:
    """Rows of `table` the connection's identity can see (table names are this file's constants)."""
    found = conn.execute(psycopg.sql.SQL("select count(*) from {}").format(psycopg.sql.Identifier(table)))
    row = found.fetchone()
    assert row is not None
    return int(row[0])


# --- two users ---------------------------------------------------------------------------------


@pytest.fixture
def two_users(make_services):
    key = es256("es-jobs")
    server = FakeAuthServer([key])
    with serve(server.respond) as url:
        services = make_services(
            llm=ScriptedLLM(answers=["x"]),
            auth_mode="supabase",
            supabase_url=url,
            service_api_key=SERVICE_KEY,
        )
        issuer = f"{url}/auth/v1"

        def as_user(sub: uuid.UUID) -> TestClient:
            token = mint(key, issuer=issuer, sub=str(sub), email=f"{sub}@example.com")
            return TestClient(create_app(services=services), headers={"Authorization": f"Bearer {token}"})

        yield services, as_user(A), as_user(B)


def test_another_users_job_does_not_exist_for_them(two_users):
    services, a, b = two_users
    accepted = upload(a, ("secret.md", b"# Secret\n\nA's purple sweet potato recipe"))
    assert b.get(accepted["status_url"]).status_code == 404
    assert b.get(accepted["events_url"]).status_code == 404
    assert b.delete(accepted["status_url"]).status_code == 404
    assert b.get("/ingest/jobs").json()["total"] == 0
    assert a.get("/ingest/jobs").json()["total"] == 1

    worker(services).drain()  # ingested as A: A's private document, not B's nor public
    assert a.get(accepted["status_url"]).json()["files"][0]["status"] == "done"
    assert a.get("/documents").json()["total"] == 1
    assert b.get("/documents").json()["total"] == 0


def test_in_sql_a_user_sees_and_cancels_only_their_own_jobs_and_cannot_choose_who_a_job_runs_as(services, db):
    a, b = user_identity(A), user_identity(B)
    with services.db.as_user(a) as conn:
        from backend.db.repositories import ingest_jobs as repo

        job_id = repo.create_job(conn, kind="upload", files=[repo.NewFile("a.md", None, b"# A\n\nx")])
    owner, run_as, claims = db.execute(
        "select owner_id, run_as, claims from ingest_jobs where id = %s", (job_id,)
    ).fetchone()
    assert (owner, run_as, claims["sub"]) == (A, "authenticated", str(A))
    with acting_as(db, b) as conn:
        assert rows(conn, "ingest_jobs") == 0
        assert rows(conn, "ingest_job_files") == 0
        cancelled = conn.execute(
            "update ingest_job_files set status = 'cancelled', finished_at = now() where job_id = %s",
            (job_id,),
        )
        assert cancelled.rowcount == 0
    with acting_as(db, b) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("insert into ingest_jobs (kind, owner_id) values ('upload', %s)", (A,))
    with acting_as(db, b) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(
            "insert into ingest_jobs (kind, claims) values ('upload', %s)", (json.dumps({"sub": str(A)}),)
        )
    with acting_as(db, b) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        # a file slipped into A's job would run as A
        conn.execute(
            "insert into ingest_job_files (job_id, position, filename, body) values (%s, 9, 'x.md', 'x')",
            (job_id,),
        )
    with acting_as(db, LOCAL_IDENTITY) as conn:
        assert rows(conn, "ingest_jobs") == 0


# --- a worker process killed mid-file ------------------------------------------------------------


@pytest.mark.slow
def test_a_worker_process_killed_mid_file_leaves_nothing_and_the_file_is_retried_once(
    client, services, database_url, db
):
    release = threading.Event()

    def embeddings_that_never_answer(path, headers, body):
        release.wait(120)
        return 503, b'{"error": {"message": "gone"}}', "application/json"

    accepted = upload(client, ("kangaroo.md", f"# 袋鼠\n\n{LONG}".encode()))
    with serve(embeddings_that_never_answer) as url:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "AUTO_MIGRATE": "false",
            "EMBEDDING_PROVIDER": "openai_compatible",
            "OPENAI_EMBEDDING_BASE_URL": f"{url}/v1",
            "OPENAI_EMBEDDING_API_KEY": "test-key",
            "OPENAI_EMBEDDING_MODEL": "fake-embed",
            "OPENAI_EMBEDDING_DIMS": "64",
            "LLM_PROVIDER": "extractive",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "backend", "worker"], env=env, cwd=PROJECT_ROOT, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 90
            while (
                db.execute("select count(*) from ingest_job_files where status = 'running'").fetchone()[0]
                == 0
            ):
                assert process.poll() is None, "the worker process exited"
                assert time.monotonic() < deadline, "the worker process never claimed the file"
                time.sleep(0.2)
            time.sleep(0.5)  # it is waiting for the embeddings now
        finally:
            process.kill()  # SIGKILL: no cleanup of any kind
            process.wait()
            release.set()
    assert db.execute("select count(*) from documents").fetchone()[0] == 0  # nothing half-stored
    assert (
        client.get(accepted["status_url"]).json()["files"][0]["status"] == "running"
    )  # until its lease ends
    expire_leases(db)

    assert worker(services, "replacement").drain() == 1
    file = client.get(accepted["status_url"]).json()["files"][0]
    assert file["status"] == "done"
    assert file["attempts"] == 2
    assert db.execute("select count(*) from documents").fetchone()[0] == 1
    chunks = db.execute("select count(*) from chunks").fetchone()[0]
    assert chunks == file["chunks_total"]


@pytest.mark.slow
def test_the_worker_command_drains_the_queue(client, database_url, monkeypatch, capsys):
    accepted = upload(client, ("a.md", b"# A\n\nplatypus"), ("b.exe", b"MZ"))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("LLM_PROVIDER", "extractive")
    get_settings.cache_clear()
    try:
        assert main(["worker", "--drain"]) == 0
    finally:
        get_settings.cache_clear()
    assert "processed 2 file(s); the queue is empty" in capsys.readouterr().out
    assert [f["status"] for f in client.get(accepted["status_url"]).json()["files"]] == ["done", "failed"]


def test_a_job_of_the_service_path_writes_the_shared_corpus(two_users):
    services, a, b = two_users
    service = TestClient(create_app(services=services), headers={"Authorization": f"Bearer {SERVICE_KEY}"})
    accepted = upload(service, ("handbook.md", b"# Handbook\n\nFifteen days of paid leave a year."))
    assert a.get(accepted["status_url"]).status_code == 404  # the service's job is not A's
    worker(services).drain()
    assert service.get(accepted["status_url"]).json()["files"][0]["status"] == "done"
    assert [d["title"] for d in a.get("/documents").json()["items"]] == ["Handbook"]  # public: everyone's
    assert [d["title"] for d in b.get("/documents").json()["items"]] == ["Handbook"]
