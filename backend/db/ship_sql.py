"""`db ship-sql`: a migration holding only the sql/ functions whose definitions changed.

Which functions changed is asked of PostgreSQL rather than guessed from text: a scratch database
receives every migration, then the sql/ files one at a time, and a file ships when applying it
changes, adds or removes a `pg_get_functiondef`. sql/ keeps one function per file, together with the
`drop function` statements that belong to it (an old signature), so the migration is the size of the
change. Before anything is written, the generated migration is applied to the same scratch database
and must reproduce exactly the functions sql/ produced.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

from backend.db import migration_lock
from backend.db.migrations import (
    REPOSITORY,
    MigrationPaths,
    migration_files,
    next_migration_file,
    write_migration,
)

# Functions and procedures of our own: pgvector may live in public too (its aggregates have no
# functiondef), and an extension's members are the extension's business.
FUNCTIONS_QUERY = """
    select p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
    from pg_proc p
    where p.pronamespace = 'public'::regnamespace and p.prokind in ('f', 'p')
      and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass
                      and d.objid = p.oid and d.deptype = 'e')
    order by 1, 2"""


class ShipSqlError(Exception):
    """sql/ cannot be shipped (a file fails to apply, no scratch database); the message says why."""


@dataclass(frozen=True)
class AppliedFile:
    path: Path
    changed: list[str]  # functions (name(args)) this file created, replaced with another body, or dropped


def function_definitions(conn: psycopg.Connection) -> dict[str, str]:
    """name(identity args) -> pg_get_functiondef, for every function in schema public."""
    conn.execute("set search_path = public, extensions")  # type names print the same either way
    rows = conn.execute(FUNCTIONS_QUERY).fetchall()
    return {f"{name}({args})": definition for name, args, definition in rows}


def differing(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The functions added, removed or redefined between two function_definitions()."""
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def apply_sql_folder(conn: psycopg.Connection, sql_dir: Path) -> list[AppliedFile]:
    """Apply sql/*.sql in name order, recording what each file changed.

    A file whose SQL-language body calls a function that a later file creates fails with
    undefined_function; it is retried after the others, so the order applied is one that works.
    """
    pending = sorted(sql_dir.glob("*.sql"))
    applied: list[AppliedFile] = []
    while pending:
        deferred: list[tuple[Path, psycopg.Error]] = []
        for path in pending:
            before = function_definitions(conn)
            try:
                with conn.transaction():  # a savepoint: a failed file leaves no trace
                    conn.execute(path.read_text(encoding="utf-8"))
            except psycopg.errors.UndefinedFunction as exc:
                deferred.append((path, exc))
                continue
            except psycopg.Error as exc:
                raise ShipSqlError(f"sql/{path.name} does not apply: {exc}") from exc
            applied.append(AppliedFile(path, differing(before, function_definitions(conn))))
        if len(deferred) == len(pending):
            stuck, error = deferred[0]
            raise ShipSqlError(f"sql/{stuck.name} does not apply: {error}") from error
        pending = [path for path, _ in deferred]
    return applied


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """A new empty database on the server of server_url (dropped afterwards); yields its conninfo."""
    name = f"pgrag_scratch_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("create database {}").format(pgsql.Identifier(name)))
    except psycopg.Error as exc:
        raise ShipSqlError(
            f"ship-sql builds the schema in a scratch database and could not create one ({exc}). "
            "Use a role allowed to create databases, or unset DATABASE_URL to use the embedded server"
        ) from exc
    try:
        yield make_conninfo(server_url, dbname=name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("drop database if exists {} with (force)").format(pgsql.Identifier(name)))


def apply_migrations(conn: psycopg.Connection, files: list[Path]) -> None:
    """Each migration file in order, as `supabase db push` runs them on an empty database."""
    for path in files:
        try:
            conn.execute(path.read_text(encoding="utf-8"))
        except psycopg.Error as exc:
            raise ShipSqlError(f"migration {path.name} does not apply to an empty database: {exc}") from exc


def render_migration(target: Path, name: str, shipped: list[AppliedFile], last_shipped: str) -> str:
    """The migration text: a header naming what changed, then each changed sql/ file verbatim."""
    changes = "; ".join(f"sql/{a.path.name}: {', '.join(_names(a.changed))}" for a in shipped)
    parts = [
        f"-- {target.name}: generated by `python -m backend db ship-sql {name}`.\n"
        f"-- The functions in sql/ whose definitions differ from what migrations up to {last_shipped}\n"
        f"-- install ({changes}); every other function is unchanged.\n"
    ]
    for applied in shipped:
        parts.append(f"\n-- ===== sql/{applied.path.name} =====\n")
        parts.append(applied.path.read_text(encoding="utf-8"))
    return "".join(parts)


def _names(functions: list[str]) -> list[str]:
    return sorted({key.split("(", 1)[0] for key in functions})


def ship_sql(name: str, server_url: str, paths: MigrationPaths = REPOSITORY) -> Path | None:
    """Write and record the migration shipping the changed sql/ functions; None when none changed."""
    migration_lock.require_intact(paths)  # never build on a shipped file that was edited
    target = next_migration_file(name, paths)  # validates the name before any database work
    existing = migration_files(paths.migrations_dir)
    with scratch_database(server_url) as url, psycopg.connect(url) as conn:
        apply_migrations(conn, existing)
        with conn.transaction(force_rollback=True):
            shipped = [a for a in apply_sql_folder(conn, paths.sql_dir) if a.changed]
            wanted = function_definitions(conn)
        if not shipped:
            return None
        text = render_migration(target, name, shipped, existing[-1].name if existing else "none")
        with conn.transaction(force_rollback=True):
            conn.execute(text)
            wrong = differing(wanted, function_definitions(conn))
        if wrong:
            raise ShipSqlError(f"the generated migration does not reproduce sql/ for: {', '.join(wrong)}")
    path = write_migration(target, text, paths)
    migration_lock.record([path.name], paths)
    return path
