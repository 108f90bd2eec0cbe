"""Scratch databases for the latency benchmark: binary COPY of a synthetic corpus, then the indexes.

The database is named after its size and dimension, so `--reuse` finds it again; what was loaded
(and how long it took) is kept as JSON in the database's comment, written only once the load
completed, so a half-loaded database is never reused. A reused database must be at the code's newest
migration (else it is reloaded) and gets the functions of sql/ as they are now.
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from backend.db import migrations
from backend.db.connection import connect
from backend.db.repositories import documents as documents_repo
from backend.db.ship_sql import apply_sql_folder
from bench.common import log
from bench.common.db import admin, bench_server, scalar, timed, with_database
from bench.common.synthetic import GENERATOR_VERSION, Batch, SyntheticCorpus
from bench.latency import collections as bench_collections

DOCUMENT_COPY = (
    "copy public.documents (id, owner_id, external_id, title, source, content_hash, metadata, collection_id) "
    "from stdin with (format binary)"
)
SERVER_SETTINGS = (
    "server_version shared_buffers work_mem maintenance_work_mem effective_cache_size "
    "max_parallel_workers_per_gather max_parallel_maintenance_workers jit random_page_cost"
).split()


def database_name(size: int, dims: int) -> str:
    return f"bench_latency_{size}_{dims}"


def fingerprint(corpus: SyntheticCorpus, model: str) -> dict[str, Any]:
    """What makes two loads interchangeable."""
    return {
        "generator": GENERATOR_VERSION,
        "size": corpus.size,
        "dims": corpus.dims,
        "seed": corpus.seed,
        "model": model,
        "collections": 2,  # bench/latency/collections.py's layout
    }


def open_database(
    size: int, dims: int, *, reuse: bool, expect: dict[str, Any], upgrade_in_place: bool = False
) -> tuple[str, dict | None]:
    """(url, the previous load's record) when reusable; otherwise a fresh, migrated database and None.

    upgrade_in_place: a reused database behind the code's migrations is upgraded rather than
    reloaded — for migrations that change functions only (a 1M load takes ~30 min).
    """
    name = database_name(size, dims)
    url = with_database(bench_server(), name)
    exists, comment = admin(
        "select count(*) > 0, max(shobj_description(oid, 'pg_database')) from pg_database where datname = %s",
        (name,),
    )
    record = json.loads(comment) if comment else None
    if reuse and record and record.get("fingerprint") == expect:
        at, head = migrations.current_revision(url), migrations.head_revision()
        if at != head and upgrade_in_place:
            log(f"database {name} is at migration {at}, the code at {head}: upgrading in place")
            migrations.upgrade(url)
            at = head
        if at == head:
            log(f"reusing database {name}")
            with connect(url) as conn:  # measure the functions sql/ defines now, not those of the load
                apply_sql_folder(conn, migrations.SQL_DIR)
                conn.commit()
            return url, record
        # A later migration may change how rows are stored (017): only a reload measures it.
        log(f"database {name} is at migration {at}, the code at {head}: reloading")
    if exists:
        log(f"dropping database {name}" + (" (different load)" if reuse else ""))
    drop_database(size, dims)
    admin(sql.SQL("create database {}").format(sql.Identifier(name)))
    migrations.upgrade(url)
    return url, None


def drop_database(size: int, dims: int) -> None:
    name = sql.Identifier(database_name(size, dims))
    admin(sql.SQL("drop database if exists {} with (force)").format(name))


def save_record(size: int, dims: int, record: dict[str, Any]) -> None:
    name, text = sql.Identifier(database_name(size, dims)), sql.Literal(json.dumps(record, default=str))
    admin(sql.SQL("comment on database {} is {}").format(name, text))


def load(
    url: str,
    corpus: SyntheticCorpus,
    *,
    model: str,
    term_stats: str,
    batch_chunks: int,
    maintenance_work_mem: str,
) -> dict[str, Any]:
    """Write documents and chunks with the HNSW index of the corpus's dimension dropped, then rebuild it.

    Each batch is one transaction: a binary COPY of its documents (with the generator's ids, so a
    load is reproducible to the byte), then of its chunks through the product's copy_chunks.
    term_stats "trigger" keeps the statement-level triggers on (their time is measured with
    track_functions); "refresh" disables the insert trigger during the load and runs
    refresh_term_stats() once at the end.
    """
    index = f"chunks_embedding_{corpus.dims}_hnsw_idx"
    # The exact plan's covering btree (migration 029's chunks_exact_384_idx, since 039 on the
    # chunk_scope_vectors copy) is rebuilt too: filled by the COPY's insertions, whose keys
    # (collection, visibility, owner, id) land all over it, its pages split half full — 4.1 GB at 1M
    # chunks against 2.15 GB rebuilt (REINDEX, 73 s; migration 029's index).
    exact_index = "chunk_scope_vectors_idx"
    out: dict[str, Any] = {
        "term_stats_mode": term_stats,
        "batch_chunks": batch_chunks,
        "maintenance_work_mem": maintenance_work_mem,
    }
    trigger_time = "select pg_stat_get_xact_function_total_time('public.term_stats_after_insert'::regproc)"
    with connect(url) as conn:
        conn.execute("set track_functions = 'pl'")  # superuser-only; the embedded server runs as postgres
        indexdef = scalar(
            conn, "select indexdef from pg_indexes where schemaname = 'public' and indexname = %s", (index,)
        )
        conn.execute(sql.SQL("drop index public.{}").format(sql.Identifier(index)))
        exact_indexdef = scalar(
            conn,
            "select indexdef from pg_indexes where schemaname = 'public' and indexname = %s",
            (exact_index,),
        )
        if exact_indexdef:
            conn.execute(sql.SQL("drop index public.{}").format(sql.Identifier(exact_index)))
        if term_stats == "refresh":
            conn.execute("alter table public.chunks disable trigger chunks_term_stats_insert")
        bench_collections.create(conn)
        conn.commit()
        generate = copy = trigger = 0.0
        loaded = 0
        for batch in corpus.batches(batch_chunks):
            generate += batch.seconds
            started = time.perf_counter()
            _copy_batch(conn, batch, model)
            trigger += (scalar(conn, trigger_time) or 0) / 1000
            conn.commit()
            copy += time.perf_counter() - started
            loaded += batch.chunk_count
            log(
                f"  loaded {loaded}/{corpus.size} chunks (copy {copy:.1f} s, of which trigger "
                f"{trigger:.1f} s; generate {generate:.1f} s)"
            )
        out.update(
            generate_seconds=round(generate, 2),
            copy_seconds=round(copy, 2),
            trigger_seconds=round(trigger, 2) if term_stats == "trigger" else None,
        )
        out["collection_chunks"] = scalar(
            conn, "select count(*) from public.chunks where collection_id is not null"
        )
        log(f"  {out['collection_chunks']} chunks in team collections")
        if term_stats == "refresh":
            out["refresh_term_stats_seconds"] = timed(conn, "select public.refresh_term_stats()")
            conn.execute("alter table public.chunks enable trigger chunks_term_stats_insert")
            conn.commit()
        out["analyze_seconds"] = timed(conn, "analyze public.chunks, public.documents")
        conn.execute(sql.SQL("set maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        out["hnsw_index_definition"] = indexdef
        out["hnsw_build_seconds"] = timed(conn, indexdef)
        if exact_indexdef:
            out["exact_index_build_seconds"] = timed(conn, exact_indexdef)
        conn.autocommit = True
        out["vacuum_analyze_seconds"] = timed(
            conn, "vacuum (analyze) public.chunks, public.documents, public.chunk_scope_vectors"
        )
    return out


def _copy_batch(conn: psycopg.Connection, batch: Batch, model: str) -> None:
    with conn.cursor() as cur, cur.copy(DOCUMENT_COPY) as copy:
        copy.set_types(["uuid", "uuid", "text", "text", "text", "text", "jsonb", "uuid"])
        for d in batch.documents:
            copy.write_row(
                [
                    d.id,
                    d.owner_id,
                    d.external_id,
                    d.title,
                    d.source,
                    d.content_hash,
                    Jsonb(d.metadata),
                    bench_collections.placed(d.id, d.owner_id),
                ]
            )
    rows = ((d.id, c) for d, (_, chunks) in zip(batch.documents, batch.rows(), strict=True) for c in chunks)
    documents_repo.copy_chunks(conn, owner_id=None, embedding_model=model, chunks=rows)


def sizes(url: str) -> dict[str, Any]:
    """Bytes of each table (total, heap, TOAST) and of each of its indexes."""
    with connect(url) as conn:
        tables = conn.execute("""
            select n.nspname || '.' || c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid),
                   coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), c.reltuples::bigint
            from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where c.relkind = 'r' and n.nspname in ('public', 'supabase_ref')
              and c.relname in ('chunks', 'documents', 'term_stats', 'corpus_stats')
            order by 2 desc""").fetchall()
        indexes = conn.execute("""
            select t.relname, n.nspname || '.' || i.relname, pg_relation_size(i.oid)
            from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
            join pg_namespace n on n.oid = i.relnamespace
            where n.nspname in ('public', 'supabase_ref') and t.relname in ('chunks', 'documents')
            order by 3 desc""").fetchall()
    return {
        "tables": [{"table": r[0], "total": r[1], "heap": r[2], "toast": r[3], "rows": r[4]} for r in tables],
        "indexes": [{"table": r[0], "index": r[1], "bytes": r[2]} for r in indexes],
    }


def server_settings(url: str) -> dict[str, str]:
    with connect(url) as conn:
        out = {n: scalar(conn, sql.SQL("show {}").format(sql.Identifier(n))) for n in SERVER_SETTINGS}
        out["jit_available"] = str(scalar(conn, "select pg_jit_available()"))
        out["vector"] = scalar(conn, "select extversion from pg_extension where extname = 'vector'")
    return out
