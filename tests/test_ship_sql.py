"""`db ship-sql` ships only the sql/ functions that changed, and the result converges."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from backend.cli import main
from backend.config import get_settings
from backend.db import migration_lock, migrations
from backend.db.ship_sql import ShipSqlError, apply_sql_folder, function_definitions, ship_sql
from tests.migration_copies import use_copy


@pytest.fixture
def repo(monkeypatch, tmp_path, server_url):
    """The db commands pointed at a copy of the repository and at the test server."""
    paths = use_copy(monkeypatch, tmp_path)
    monkeypatch.setenv("DATABASE_URL", server_url)
    get_settings.cache_clear()
    yield paths
    get_settings.cache_clear()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def migrated_with(url: str, files: list[Path]) -> dict[str, str]:
    """The functions of a database after these migration files, in order."""
    with psycopg.connect(url, autocommit=True) as conn:
        for path in files:
            conn.execute(path.read_text(encoding="utf-8"))
        return function_definitions(conn)


def assert_converges(paths: migrations.MigrationPaths, shipped: Path, fresh_database) -> None:
    """A fresh database and one already at the previous head both end up with exactly sql/."""
    every = migrations.migration_files(paths.migrations_dir)
    fresh = fresh_database()
    installed = migrated_with(fresh, every)
    with psycopg.connect(fresh) as conn:
        assert [a.path.name for a in apply_sql_folder(conn, paths.sql_dir) if a.changed] == []
    upgraded = fresh_database()
    migrations.upgrade(upgraded)  # the real repository's head: a deployed database
    assert migrated_with(upgraded, [shipped]) == installed


def test_a_tuning_change_ships_only_its_function(repo, fresh_database, capsys):
    edit(repo.sql_dir / "match_documents.sql", "set hnsw.ef_search = 200", "set hnsw.ef_search = 220")
    assert main(["db", "ship-sql", "tune_ef_search"]) == 0
    number = int(migrations.head_revision()) + 1
    shipped = repo.migrations_dir / f"{number:03d}_tune_ef_search.sql"
    assert f"wrote {shipped}" in capsys.readouterr().out
    text = shipped.read_text(encoding="utf-8")
    assert text.count("create or replace function") == 1
    assert "create or replace function public.match_documents(" in text
    assert text.endswith((repo.sql_dir / "match_documents.sql").read_text(encoding="utf-8"))
    assert len(text.splitlines()) < 150  # all of sql/ is ~1,000 lines
    assert (repo.versions_dir / f"r{number:03d}.py").exists()
    status = migration_lock.lock_status(repo)
    assert status.intact
    assert status.unrecorded == []
    assert_converges(repo, shipped, fresh_database)

    assert main(["db", "ship-sql", "again"]) == 1
    assert "nothing to ship, nothing written" in capsys.readouterr().out
    assert migrations.migration_files(repo.migrations_dir)[-1] == shipped


def test_a_changed_signature_ships_with_the_drop_of_the_old_one(repo, server_url, fresh_database):
    edit(
        repo.sql_dir / "or_tsquery.sql",
        "create or replace function public.or_tsquery(tokens text)",
        "drop function if exists public.or_tsquery(text);\n"
        "create or replace function public.or_tsquery(tokens text, config regconfig default 'simple')",
    )
    edit(repo.sql_dir / "or_tsquery.sql", "to_tsvector('simple'::regconfig,", "to_tsvector(config,")
    shipped = ship_sql("or_tsquery_config", server_url, repo)
    assert shipped is not None
    text = shipped.read_text(encoding="utf-8")
    assert "drop function if exists public.or_tsquery(text);" in text
    assert text.count("create or replace function") == 1
    assert "sql/or_tsquery.sql: or_tsquery" in text.splitlines()[2]
    assert_converges(repo, shipped, fresh_database)


def test_new_functions_ship_in_an_order_that_applies(repo, server_url, fresh_database):
    """A SQL function is checked at creation, so one calling another must come after it."""
    (repo.sql_dir / "a_caller.sql").write_text(
        "create or replace function public.a_caller() returns integer language sql\n"
        "as $$ select public.z_callee() + 1 $$;\n",
        encoding="utf-8",
    )
    (repo.sql_dir / "z_callee.sql").write_text(
        "create or replace function public.z_callee() returns integer language sql as $$ select 41 $$;\n",
        encoding="utf-8",
    )
    shipped = ship_sql("answer", server_url, repo)
    assert shipped is not None
    text = shipped.read_text(encoding="utf-8")
    assert text.index("-- ===== sql/z_callee.sql") < text.index("-- ===== sql/a_caller.sql")
    assert_converges(repo, shipped, fresh_database)


def test_a_broken_function_is_refused_and_nothing_is_written(repo, capsys):
    edit(repo.sql_dir / "lexemes_tsquery.sql", "returns tsquery", "returns tsquery_typo")
    before = sorted(p.name for p in repo.migrations_dir.iterdir())
    lock = repo.lock_file.read_bytes()
    assert main(["db", "ship-sql", "broken"]) == 2
    err = capsys.readouterr().err
    assert "sql/lexemes_tsquery.sql does not apply" in err
    assert 'type "tsquery_typo" does not exist' in err
    assert sorted(p.name for p in repo.migrations_dir.iterdir()) == before
    assert repo.lock_file.read_bytes() == lock


def test_a_bad_name_is_refused_before_any_database_work(repo, capsys):
    assert main(["db", "ship-sql", "Tune RRF"]) == 2
    assert "lower-case letters, digits and _" in capsys.readouterr().err


def test_apply_sql_folder_names_the_file_when_nothing_can_proceed(database_url, tmp_path):
    (tmp_path / "loop.sql").write_text(
        "create function public.loop_a() returns int language sql as $$ select public.loop_b() $$;\n",
        encoding="utf-8",
    )
    with psycopg.connect(database_url) as conn, pytest.raises(ShipSqlError, match=r"sql/loop\.sql"):
        apply_sql_folder(conn, tmp_path)
