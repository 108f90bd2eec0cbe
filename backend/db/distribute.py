"""`db distribute`: a migrated pgrag database spread over its Citus cluster (Citus deployments only).

The ordinary migrations (supabase/migrations) build the single-node schema everywhere, Citus included;
they are not Citus-aware and must stay valid for Supabase and plain PostgreSQL. This step, run on the
coordinator after them, applies sql/citus/: `distribute.sql` (the layout: tenant keys, co-located
tables, policies Citus accepts; one transaction, skipped when already done) and then every function
file there, the Citus versions of the functions whose single-node form would query other shards
(triggers, term statistics, the retrieval functions). It is idempotent, and must run again after every
`db upgrade` on a cluster: a migration that re-creates a function installs its single-node form.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from backend import PROJECT_ROOT

logger = logging.getLogger(__name__)

CITUS_SQL_DIR = PROJECT_ROOT / "sql" / "citus"
LAYOUT_FILE = "distribute.sql"

# Request roles: Citus opens its connections to the workers as the current role (SET ROLE included),
# so the roles requests run as must be able to log in to the workers (over loopback here; a real
# cluster authenticates them with passwords or certificates, see docs/scaling.md).
LOGIN_ROLES = ("authenticated", "service_role")

# Per database, on every node: the type names Citus sends to workers resolve in `extensions` too
# (migrations create functions over pgvector's types there), the triggers of sql/citus/ may exist on
# distributed tables, and SET LOCAL (request.jwt.claims, hnsw.*) reaches the workers.
# Values are SQL text (constants of this module): search_path is a list, not one quoted name.
DATABASE_SETTINGS = {
    "search_path": "public, extensions",
    "citus.enable_unsafe_triggers": "on",
    "citus.propagate_set_commands": "'local'",
}


class DistributeError(RuntimeError):
    """The database cannot be distributed (not a Citus coordinator, not migrated); says what to do."""


@dataclass(frozen=True)
class DistributeReport:
    workers: int
    shard_count: int
    tables: list[tuple[str, str, str]]  # (table, distribution column, colocation group)
    functions: list[str]


def citus_version(conn: psycopg.Connection) -> str | None:
    """The citus extension's version in this database, or None."""
    row = conn.execute("select extversion from pg_extension where extname = 'citus'").fetchone()
    return row[0] if row else None


def is_distributed(conn: psycopg.Connection) -> bool:
    """Whether this database runs Citus with pgrag's tables distributed (False on plain PostgreSQL)."""
    if conn.execute("select to_regclass('pg_catalog.pg_dist_partition')").fetchone() == (None,):
        return False
    row = conn.execute(
        "select exists (select 1 from pg_dist_partition where logicalrelid = to_regclass('public.documents'))"
    ).fetchone()
    return bool(row and row[0])


def prepare_database(conn: psycopg.Connection) -> int:
    """The database settings on the coordinator and every worker; returns the worker count.

    Needed before `db upgrade` on a fresh cluster too: the migrations' functions reach the workers.
    """
    if citus_version(conn) is None:
        raise DistributeError(
            "this database has no citus extension: db distribute runs on a Citus coordinator "
            "(python -m backend cluster up starts a local one)"
        )
    workers = conn.execute("select count(*) from citus_get_active_worker_nodes()").fetchone()
    if not workers or workers[0] == 0:
        raise DistributeError("the coordinator has no active worker nodes (select citus_add_node(...) first)")
    database = conn.execute("select current_database()").fetchone()
    assert database is not None
    _on_every_node(
        conn,
        [
            sql.SQL("alter database {} set {} = {}").format(
                sql.Identifier(database[0]),
                sql.Identifier(*name.split(".")),
                sql.SQL(value),
            )
            for name, value in DATABASE_SETTINGS.items()
        ],
    )
    return int(workers[0])


def enable_role_logins(conn: psycopg.Connection) -> None:
    """The request roles (created by migration 013) may log in to every node."""
    _on_every_node(
        conn, [sql.SQL("alter role {} login").format(sql.Identifier(role)) for role in LOGIN_ROLES]
    )


def _on_every_node(conn: psycopg.Connection, commands: list[sql.Composed]) -> None:
    """Each command on the coordinator and on every worker, exactly once per node.

    Propagation is off on both sides: whether Citus counts the object as distributed (and a worker
    then refuses DDL on it) depends on how the database and the roles came to exist.
    """
    conn.execute("set citus.enable_ddl_propagation = off")
    try:
        for command in commands:
            text = command.as_string(conn)
            conn.execute(command)
            failed = conn.execute(
                "select nodename, nodeport, result from run_command_on_workers(%s) where not success",
                (f"set citus.enable_ddl_propagation = off; {text}",),
            ).fetchall()
            if failed:
                raise DistributeError(f"{text} failed on {failed[0][0]}:{failed[0][1]}: {failed[0][2]}")
    finally:
        conn.execute("reset citus.enable_ddl_propagation")


def distribute(
    url: str, *, shard_count: int | None = None, log: Callable[[str], None] = logger.info
) -> DistributeReport:
    """Prepare the nodes, distribute the tables (once) and install sql/citus/'s functions."""
    with psycopg.connect(url, autocommit=True) as conn:
        workers = prepare_database(conn)
        if conn.execute("select to_regclass('public.research_runs') is null").fetchone() == (True,):
            raise DistributeError(
                "the pgrag schema is not migrated here: run python -m backend db upgrade, then db distribute"
            )
        enable_role_logins(conn)
    # A fresh session: the database settings just made apply to it.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set search_path = public, extensions")
        if shard_count is not None:
            conn.execute("select set_config('pgrag.shard_count', %s, false)", (str(shard_count),))
        log(f"layout: {LAYOUT_FILE}")
        with conn.transaction():
            conn.execute(_read(CITUS_SQL_DIR / LAYOUT_FILE))
        functions = []
        for path in function_files():
            conn.execute(_read(path))
            functions.append(path.stem)
        log(f"functions: {len(functions)} from sql/citus/")
        conn.execute("select public.refresh_term_stats()")
        conn.execute("analyze")
        return DistributeReport(workers, _shard_count(conn), _tables(conn), functions)


def function_files(sql_dir: Path = CITUS_SQL_DIR) -> list[Path]:
    """The function files of sql/citus/, in name order (the layout file excluded)."""
    return sorted(p for p in sql_dir.glob("*.sql") if p.name != LAYOUT_FILE)


def _read(path: Path) -> bytes:
    # bytes: psycopg sends the text as is (no client-side parameter parsing of '%' in function bodies)
    return path.read_bytes()


def _shard_count(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "select shard_count from citus_tables where table_name = 'public.documents'::regclass"
    ).fetchone()
    return int(row[0]) if row else 0


def _tables(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "select table_name::text, distribution_column, colocation_id::text from citus_tables "
        "where table_name::text not like 'pg_%' order by colocation_id, table_name::text"
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]
