"""Bulk mode in SQL: chunk indexes and term-statistics triggers deferred to the end of one transaction
(backend/documents/bulk_load.py drives it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql


@dataclass(frozen=True)
class DeferredIndex:
    schema: str
    name: str
    definition: str  # pg_get_indexdef(): exactly what the migrations created


def defer_chunk_indexes(conn: psycopg.Connection, *, methods: Sequence[str]) -> list[DeferredIndex]:
    """Lock chunks, drop its indexes of these access methods and pause the term-stats triggers.

    In the caller's transaction: the ACCESS EXCLUSIVE lock blocks every reader of chunks until it
    ends, and a rollback restores the indexes and triggers. Returns what rebuild_chunk_indexes needs.
    """
    conn.execute("lock table chunks in access exclusive mode")
    rows = conn.execute(
        """
        select n.nspname, i.relname, pg_get_indexdef(i.oid)
        from pg_index x
        join pg_class i on i.oid = x.indexrelid
        join pg_namespace n on n.oid = i.relnamespace
        join pg_am am on am.oid = i.relam
        where x.indrelid = 'chunks'::regclass and am.amname = any(%(methods)s)
          and not x.indisunique and not x.indisprimary
        order by i.relname
        """,
        {"methods": list(methods)},
    ).fetchall()
    indexes = [DeferredIndex(*r) for r in rows]
    for index in indexes:
        conn.execute(sql.SQL("drop index {}").format(sql.Identifier(index.schema, index.name)))
    for trigger in _term_stats_triggers(conn):
        conn.execute(sql.SQL("alter table chunks disable trigger {}").format(sql.Identifier(trigger)))
    return indexes


def refresh_term_stats(conn: psycopg.Connection) -> None:
    """Rebuild term statistics from the chunks (migration 006) and resume their triggers."""
    conn.execute("select refresh_term_stats()")
    for trigger in _term_stats_triggers(conn):
        conn.execute(sql.SQL("alter table chunks enable trigger {}").format(sql.Identifier(trigger)))


def rebuild_chunk_indexes(conn: psycopg.Connection, indexes: Sequence[DeferredIndex]) -> None:
    """Create the dropped indexes again from their recorded definitions."""
    for index in indexes:
        conn.execute(index.definition)


def _term_stats_triggers(conn: psycopg.Connection) -> list[str]:
    # The triggers whose work refresh_term_stats() redoes, found by their functions (migrations 006, 018).
    rows = conn.execute(
        """
        select tgname from pg_trigger
        where tgrelid = 'chunks'::regclass and not tgisinternal
          and tgfoid in ('term_stats_after_insert'::regproc, 'term_stats_after_delete'::regproc,
                         'term_stats_after_update'::regproc)
        order by tgname
        """
    ).fetchall()
    return [r[0] for r in rows]


def configure_bulk_transaction(
    conn: psycopg.Connection, *, maintenance_work_mem: str, parallel_workers: int
) -> None:
    """For the rest of the caller's transaction: no timeouts, memory and workers for index builds.

    On a Citus coordinator also one connection per worker for the whole load: the load locks every
    shard of chunks and drops their indexes over parallel connections, and a later write whose
    trigger reaches a chunk shard through another connection of the same transaction would wait for
    the first (Citus reports a distributed deadlock). Elsewhere the setting is an unused placeholder.
    """
    conn.execute(
        """
        select set_config('statement_timeout', '0', true),
               set_config('idle_in_transaction_session_timeout', '0', true),
               set_config('maintenance_work_mem', %(memory)s, true),
               set_config('max_parallel_maintenance_workers', %(workers)s, true),
               set_config('citus.multi_shard_modify_mode', 'sequential', true)
        """,
        {"memory": maintenance_work_mem, "workers": str(parallel_workers)},
    )


def analyze_documents_and_chunks(conn: psycopg.Connection) -> None:
    """Fresh planner statistics after a large load (autovacuum would take a while to notice)."""
    conn.execute("analyze documents, chunks")
