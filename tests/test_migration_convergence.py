"""A database migrated at any earlier commit of main and upgraded to head equals a fresh one at head."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from alembic import command

from backend.db import migrations
from tests.schema_snapshot import connection_snapshot, differences, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "migrations"

# Every distinct set of migration files main has had, with the revision a deployment then reached.
# Files 001-009 were never changed after their commit (supabase/migrations.lock now guarantees it);
# 010 was edited twice after it shipped, and its older versions are kept in FIXTURES/<commit>/.
EARLIER_STATES = [
    ("ba6af50", "005"),
    ("1989b29", "007"),
    ("beb30d5", "008"),
    ("69de813", "009"),
    ("541be78", "010"),  # 010 as first shipped
    ("5b015e2", "010"),  # + the match_df_budget conjunction fallback
    ("dcb9423", "010"),  # + the sub-token rule (today's 010)
]


def files_at(commit: str, revision: str) -> list[Path]:
    """The migration files a deployment at `commit` had run, in order."""
    files = [p for p in migrations.migration_files() if migrations.migration_number(p) <= revision]
    return [FIXTURES / commit / p.name if (FIXTURES / commit / p.name).exists() else p for p in files]


def deploy_as_at(url: str, files: list[Path], revision: str) -> None:
    """Run the files as the deployment did, and leave the database marked as at `revision`."""
    with psycopg.connect(url, autocommit=True) as conn:
        for path in files:
            conn.execute(path.read_text(encoding="utf-8"))
    command.stamp(migrations.alembic_config(url), revision)


@pytest.fixture(scope="module")
def head(fresh_database) -> dict[str, list[tuple]]:
    url = fresh_database()
    migrations.upgrade(url)
    return snapshot(url)


@pytest.mark.parametrize(("commit", "revision"), EARLIER_STATES, ids=[f"{c}@{r}" for c, r in EARLIER_STATES])
def test_database_migrated_at_an_earlier_commit_upgrades_to_exactly_head(
    fresh_database, head, commit, revision
):
    url = fresh_database()
    deploy_as_at(url, files_at(commit, revision), revision)
    assert migrations.upgrade(url) == (revision, migrations.head_revision())
    wrong = differences(snapshot(url), head)  # the fresh database at head is what is expected
    assert not wrong, "\n".join(wrong)


# One change of each kind a deployment could miss; the comparison must name its category.
DRIFT = {
    "columns": "alter table documents alter column title set default 'untitled'",
    "storage": "alter table chunks alter column fts set storage extended",
    "relations": "alter table chunks set (fillfactor = 90)",
    "indexes": "create index chunks_position_idx on chunks (position)",
    "constraints": "alter table chunks add constraint chunks_position_check check (position >= 0)",
    "triggers": "alter table chunks disable trigger chunks_term_stats_insert",
    "rls": "alter table documents force row level security",
    "policies": 'create policy "Anyone can read documents" on documents for select using (true)',
    "functions": "alter function or_tsquery(text) set work_mem = '1MB'",
    "function_privileges": "revoke execute on function or_tsquery(text) from public",
    "extensions": "alter extension vector set schema public",
}


def test_the_comparison_sees_each_kind_of_drift(fresh_database, head):
    url = fresh_database()
    migrations.upgrade(url)
    with psycopg.connect(url) as conn:
        for category, statement in DRIFT.items():
            with conn.transaction(force_rollback=True):
                conn.execute(statement)
                seen = {line.split(":", 1)[0] for line in differences(connection_snapshot(conn), head)}
            assert category in seen, statement


def test_every_fixture_is_an_older_version_of_a_migration_and_is_exercised():
    fixtures = sorted(FIXTURES.glob("*/*.sql"))
    assert fixtures, "no historical migration files found"
    shipped = {p.name: p for p in migrations.migration_files()}
    for path in fixtures:
        assert path.parent.name in {commit for commit, _ in EARLIER_STATES}, path
        assert path.name in shipped, path
        assert path.read_bytes() != shipped[path.name].read_bytes(), f"{path} equals today's file"
