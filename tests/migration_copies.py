"""A throw-away copy of the migrations, their revisions, the lock and sql/, for commands that write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backend.db import migration_lock, migrations
from backend.db.migrations import MigrationPaths


def copy_repository(root: Path) -> MigrationPaths:
    """The repository's migration layout copied under root (the real files are never touched)."""
    real = migrations.REPOSITORY
    paths = MigrationPaths(
        migrations_dir=root / "supabase" / "migrations",
        versions_dir=root / "versions",
        lock_file=root / "supabase" / "migrations.lock",
        sql_dir=root / "sql",
    )
    shutil.copytree(real.migrations_dir, paths.migrations_dir)
    shutil.copytree(real.versions_dir, paths.versions_dir, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(real.sql_dir, paths.sql_dir)
    # Recorded afresh from the copied files: these tests exercise the lock, whatever state the
    # repository's own lock is in (test_migration_lock.py checks that one).
    migration_lock.record_unrecorded(paths)
    return paths


def use_copy(monkeypatch: pytest.MonkeyPatch, root: Path) -> MigrationPaths:
    """Point the `db` commands at a copy of the repository."""
    paths = copy_repository(root)
    monkeypatch.setattr(migrations, "REPOSITORY", paths)
    return paths
