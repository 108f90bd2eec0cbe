"""Migrations: one authority (supabase/migrations), applied identically by Alembic and by plain SQL."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import psycopg
import pytest

from backend import PROJECT_ROOT
from backend.db import migrations
from backend.db.ship_sql import apply_sql_folder, function_definitions
from tests.schema_snapshot import snapshot

USER_TABLES = [
    "chunks",
    "conversations",
    "corpus_stats",
    "documents",
    "embedding_cache",
    "ingest_job_files",
    "ingest_jobs",
    "messages",
    "research_runs",
    "term_stats",
    "web_search_cache",
]


def test_every_migration_file_has_exactly_one_alembic_revision():
    sql_numbers = [f.name[:3] for f in migrations.migration_files()]
    revision_numbers = sorted(p.stem[1:] for p in migrations.VERSIONS_DIR.glob("r*.py"))
    assert sql_numbers == revision_numbers
    assert sql_numbers == [f"{i:03d}" for i in range(1, len(sql_numbers) + 1)], "numbers must be contiguous"
    assert "005_message_sources.sql" in [f.name for f in migrations.migration_files()]


def test_every_file_in_the_migrations_folder_is_a_numbered_migration():
    """`supabase db push` runs every file there; Alembic only the numbered ones."""
    names = sorted(p.name for p in migrations.MIGRATIONS_DIR.iterdir())
    assert names == [f.name for f in migrations.migration_files()]


def test_revision_modules_are_exactly_what_write_revision_generates(tmp_path):
    """A revision only applies its file: hand edits (a second file, a data fix) would bypass the lock."""
    for sql_file in migrations.migration_files():
        generated = migrations.write_revision(sql_file.name, tmp_path)
        shipped = migrations.VERSIONS_DIR / generated.name
        assert shipped.read_text(encoding="utf-8") == generated.read_text(encoding="utf-8"), shipped.name


def test_upgrade_on_empty_database_then_rerun_is_a_noop(fresh_database):
    url = fresh_database()
    assert migrations.upgrade(url) == (None, migrations.head_revision())
    first = snapshot(url)
    assert migrations.upgrade(url) == (migrations.head_revision(), migrations.head_revision())
    assert snapshot(url) == first
    tables = {row[0] for row in first["rls"]}
    assert set(USER_TABLES) <= tables


def test_the_384_dimension_graph_is_built_with_the_measured_parameters(fresh_database):
    """m 32 and ef_construction 128 (migrations 031, 037): at 1M chunks m 16 left recall@10 at
    0.937-0.945 with 2-3 questions in 100 finding none of their top 10; m 32 gives 0.970-0.978."""
    url = fresh_database()
    migrations.upgrade(url)
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "select reloptions from pg_class where relname = 'chunks_embedding_384_hnsw_idx'"
        ).fetchone()
    assert row is not None
    assert sorted(row[0]) == ["ef_construction=128", "m=32"]


def run_alembic_upgrade(url: str) -> subprocess.CompletedProcess[str]:
    """`alembic upgrade head` as a user runs it, against `url`."""
    return subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_alembic_cli_produces_exactly_what_the_plain_sql_files_produce(fresh_database):
    plain_url, alembic_url = fresh_database(), fresh_database()
    with psycopg.connect(plain_url, autocommit=True) as conn:
        for path in migrations.migration_files():  # what `supabase db push` does: each file, in order
            conn.execute(path.read_text(encoding="utf-8"))

    result = run_alembic_upgrade(alembic_url)
    assert result.returncode == 0, result.stderr
    assert snapshot(alembic_url) == snapshot(plain_url)
    again = run_alembic_upgrade(alembic_url)
    assert again.returncode == 0, again.stderr
    assert "Running upgrade" not in again.stderr


def test_functions_in_sql_folder_match_what_migrations_install(database_url):
    """Editing sql/*.sql without shipping a migration (db ship-sql) fails here."""
    with psycopg.connect(database_url) as conn:
        installed = function_definitions(conn)
        applied = apply_sql_folder(conn, migrations.SQL_DIR)
        from_files = function_definitions(conn)
        conn.rollback()
    assert {f"sql/{a.path.name}": a.changed for a in applied if a.changed} == {}
    assert from_files == installed
    for name in ("hybrid_search", "match_documents", "or_tsquery", "embedding_spaces"):
        assert any(key.startswith(f"{name}(") for key in installed)


def test_sql_folder_holds_one_function_per_file_named_after_it(fresh_database):
    """db ship-sql ships whole files: one function each keeps a migration the size of the change."""
    with psycopg.connect(fresh_database()) as conn:
        conn.execute("create schema extensions; create extension vector with schema extensions")
        conn.execute("set check_function_bodies = off")  # the bodies read tables this database lacks
        for path in sorted(migrations.SQL_DIR.glob("*.sql")):
            with conn.transaction(force_rollback=True):
                conn.execute(path.read_text(encoding="utf-8"))
                created = [key.split("(")[0] for key in function_definitions(conn)]
            assert created == [path.stem], path.name


def test_row_level_security_hides_rows_from_anon_but_not_from_the_backend(db):
    db.execute("insert into documents (external_id, content_hash) values ('secret', 'h')")
    rls = dict(
        db.execute(
            "select relname, relrowsecurity from pg_class "
            "where relnamespace = 'public'::regnamespace and relkind = 'r'"
        ).fetchall()
    )
    assert all(rls[t] for t in USER_TABLES)
    # Supabase grants table privileges to anon; RLS without policies must still return nothing.
    db.execute(
        "do $$ begin if not exists (select 1 from pg_roles where rolname = 'anon') "
        "then create role anon nologin; end if; end $$"
    )
    # granted inside a transaction that is rolled back: the session's database keeps its privileges
    with db.transaction(force_rollback=True):
        db.execute("grant usage on schema public to anon")
        db.execute("grant select on all tables in schema public to anon")
        db.execute("set local role anon")
        assert db.execute("select count(*) from documents").fetchone() == (0,)
        db.execute("reset role")
    assert db.execute("select count(*) from documents").fetchone() == (1,)


@pytest.mark.slow
def test_processes_starting_the_embedded_database_at_once_share_one_healthy_server(tmp_path):
    data_dir = tmp_path / "pg"
    script = textwrap.dedent(f"""
        from pathlib import Path
        import psycopg
        from backend.db.embedded import start_embedded_server
        from backend.db import migrations
        url = start_embedded_server(Path({str(data_dir)!r}))
        migrations.upgrade(url)
        with psycopg.connect(url) as conn:
            print(conn.execute("select version_num from alembic_version").fetchone()[0])
    """)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=180) for p in procs]
    try:
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
            assert out.strip() == migrations.head_revision()
    finally:
        from backend.db.embedded import stop_embedded_server

        stop_embedded_server(data_dir)


def test_migrates_a_database_where_pgvector_already_lives_in_public(fresh_database):
    url = fresh_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create extension vector")  # schema public, as on many existing servers
    migrations.upgrade(url)
    with psycopg.connect(url) as conn:
        conn.execute("set search_path = public, extensions")
        conn.execute("insert into documents (external_id, content_hash) values ('d', 'h')")
        conn.execute(
            "insert into chunks (document_id, position, content, content_hash, content_tokens, "
            "embedding, embedding_model) select id, 0, 'x', 'h', 'x', '[1,0,0]', 'm' from documents"
        )
        assert conn.execute("select count(*) from match_documents('[1,0,0]', 1)").fetchone() == (1,)
