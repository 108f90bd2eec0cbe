"""Shipped migrations are immutable: supabase/migrations.lock records each one's sha256."""

from __future__ import annotations

import re

import pytest

from backend.cli import main
from backend.db import migration_lock, migrations
from tests.migration_copies import copy_repository, use_copy


def test_no_shipped_migration_changed_or_disappeared():
    status = migration_lock.lock_status()
    assert status.intact, migration_lock.describe_damage(status)


def test_every_migration_is_recorded():
    assert migration_lock.lock_status().unrecorded == [], "record it: python -m backend db lock"


def test_the_lock_is_in_sha256sum_format():
    """So `cd supabase/migrations && sha256sum --check ../migrations.lock` works without Python."""
    lines = migrations.REPOSITORY.lock_file.read_text(encoding="utf-8").splitlines()
    assert all(re.fullmatch(r"[0-9a-f]{64}  \d{3}_[a-z0-9_]+\.sql", line) for line in lines), lines
    names = [line.split("  ")[1] for line in lines]
    assert names == sorted(set(names))


def test_editing_removing_or_adding_a_migration_is_noticed(tmp_path):
    paths = copy_repository(tmp_path)
    shipped = paths.migrations_dir / "004_retrieval_functions.sql"
    shipped.write_text(shipped.read_text(encoding="utf-8") + "\n-- a harmless comment\n", encoding="utf-8")
    (paths.migrations_dir / "002_conversations_and_messages.sql").unlink()
    (paths.migrations_dir / "099_new.sql").write_text("select 1;\n", encoding="utf-8")
    status = migration_lock.lock_status(paths)
    assert status.changed == ["004_retrieval_functions.sql"]
    assert status.missing == ["002_conversations_and_messages.sql"]
    assert status.unrecorded == ["099_new.sql"]
    assert "004_retrieval_functions.sql changed after it shipped" in migration_lock.describe_damage(status)


def test_db_lock_only_adds_entries(monkeypatch, tmp_path, capsys):
    paths = use_copy(monkeypatch, tmp_path)
    before = paths.lock_file.read_text(encoding="utf-8")
    assert main(["db", "new-migration", "add_a_column"]) == 0
    new_file = migrations.migration_files(paths.migrations_dir)[-1]
    assert (paths.versions_dir / f"r{migrations.migration_number(new_file)}.py").exists()
    assert migration_lock.lock_status(paths).unrecorded == [new_file.name]  # recorded when final
    new_file.write_text("alter table documents add column language text;\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["db", "lock"]) == 0
    assert capsys.readouterr().out == f"recorded {new_file.name}\n"
    after = paths.lock_file.read_text(encoding="utf-8")
    assert after.startswith(before)
    assert after[len(before) :] == f"{migration_lock.file_checksum(new_file)}  {new_file.name}\n"
    assert main(["db", "lock"]) == 0
    assert "already recorded" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["edit", "remove"])
def test_db_lock_refuses_while_a_shipped_migration_differs(monkeypatch, tmp_path, capsys, damage):
    paths = use_copy(monkeypatch, tmp_path)
    shipped = paths.migrations_dir / "010_fts_in_heap_row_and_filtered_ef_search.sql"
    if damage == "edit":
        shipped.write_text(shipped.read_text(encoding="utf-8").replace("2000", "3000"), encoding="utf-8")
    else:
        shipped.unlink()
    (paths.migrations_dir / "099_new.sql").write_text("select 1;\n", encoding="utf-8")
    before = paths.lock_file.read_bytes()
    for command in (["db", "lock"], ["db", "new-migration", "another"], ["db", "ship-sql", "tune"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert "010_fts_in_heap_row_and_filtered_ef_search.sql" in err
        assert "ship the change as a new migration" in err
    assert paths.lock_file.read_bytes() == before
    assert not (paths.migrations_dir / "100_another.sql").exists()
