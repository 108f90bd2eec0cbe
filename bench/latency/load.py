"""Scratch databases for the latency benchmark: binary COPY of a synthetic corpus, then the indexes.

The database is named after its size and dimension, so `--reuse` finds it again; what was loaded
(and how long it took) is kept as JSON in the database's comment, written only once the load
completed, so a half-loaded database is never reused.
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
from backend.db.embedded import start_embedded_server
from bench.common import BENCH_SERVER_DIR, log, supabase_ref
from bench.common.db import with_database
from bench.common.synthetic import GENERATOR_VERSION, SyntheticCorpus

DOC_COLUMNS = "id, owner_id, external_id, title, source, content_hash, metadata"
DOC_TYPES = ["uuid", "uuid", "text", "text", "text", "text", "jsonb"]
CHUNK_COLUMNS = (
    "document_id, owner_id, position, content, heading_path, content_hash, content_tokens, "
    "embedding, embedding_model, metadata"
)
CHUNK_TYPES = ["uuid", "uuid", "int4", "text", "text[]", "text", "text", "vector", "text", "jsonb"]


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
    }


def open_database(size: int, dims: int, *, reuse: bool, expect: dict[str, Any]) -> tuple[str, dict | None]:
    """(url, the previous load's record) when reusable; otherwise a fresh, migrated database and None."""
    server = start_embedded_server(BENCH_SERVER_DIR)
    name = database_name(size, dims)
    with psycopg.connect(server, autocommit=True) as conn:
        row = conn.execute(
            "select shobj_description(oid, 'pg_database') from pg_database where datname = %s", (name,)
        ).fetchone()
        record = json.loads(row[0]) if row and row[0] else None
        if reuse and record and record.get("fingerprint") == expect:
            log(f"reusing database {name}")
            return with_database(server, name), record
        if row:
            log(f"dropping database {name}" + (" (different load)" if reuse else ""))
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = with_database(server, name)
    migrations.upgrade(url)
    return url, None


def drop_database(size: int, dims: int) -> None:
    server = start_embedded_server(BENCH_SERVER_DIR)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(
                sql.Identifier(database_name(size, dims))
            )
        )


def save_record(url: str, size: int, dims: int, record: dict[str, Any]) -> None:
    server = start_embedded_server(BENCH_SERVER_DIR)
    text = json.dumps(record, default=str)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("comment on database {} is {}").format(
                sql.Identifier(database_name(size, dims)), sql.Literal(text)
            )
        )


def load(
    url: str,
    corpus: SyntheticCorpus,
    *,
    model: str,
    term_stats: str,
    batch_chunks: int,
    maintenance_work_mem: str,
) -> dict[str, Any]:
    """COPY documents and chunks with the HNSW index of the corpus's dimension dropped, then rebuild it.

    term_stats "trigger" keeps the statement-level triggers on (their time is measured with
    track_functions); "refresh" disables the insert trigger during the load and runs
    refresh_term_stats() once at the end.
    """
    index = f"chunks_embedding_{corpus.dims}_hnsw_idx"
    out: dict[str, Any] = {
        "term_stats_mode": term_stats,
        "batch_chunks": batch_chunks,
        "maintenance_work_mem": maintenance_work_mem,
    }
    with connect(url) as conn:
        conn.execute("set track_functions = 'pl'")  # superuser-only; the embedded server runs as postgres
        indexdef = _scalar(
            conn, "select indexdef from pg_indexes where schemaname = 'public' and indexname = %s", (index,)
        )
        conn.execute(sql.SQL("drop index public.{}").format(sql.Identifier(index)))
        if term_stats == "refresh":
            conn.execute("alter table public.chunks disable trigger chunks_term_stats_insert")
        conn.commit()
        generate = copy = trigger = 0.0
        loaded = 0
        for batch in corpus.batches(batch_chunks):
            generate += batch.seconds
            started = time.perf_counter()
            _copy_batch(conn, batch, model)
            trigger += (
                _scalar(
                    conn,
                    "select coalesce(pg_stat_get_xact_function_total_time("
                    "'public.term_stats_after_insert'::regproc), 0)",
                )
                / 1000
            )
            conn.commit()
            copy += time.perf_counter() - started
            loaded += batch.chunk_count
            log(
                f"  loaded {loaded}/{corpus.size} chunks (copy {copy:.1f} s, of which "
                f"trigger {trigger:.1f} s; "
                f"generate {generate:.1f} s)"
            )
        out.update(
            generate_seconds=round(generate, 2),
            copy_seconds=round(copy, 2),
            trigger_seconds=round(trigger, 2) if term_stats == "trigger" else None,
        )
        if term_stats == "refresh":
            out["refresh_term_stats_seconds"] = _timed(conn, "select public.refresh_term_stats()")
            conn.execute("alter table public.chunks enable trigger chunks_term_stats_insert")
            conn.commit()
        out["analyze_seconds"] = _timed(conn, "analyze public.chunks, public.documents")
        conn.execute(sql.SQL("set maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        out["hnsw_index_definition"] = indexdef
        out["hnsw_build_seconds"] = _timed(conn, indexdef)
        conn.autocommit = True
        out["vacuum_analyze_seconds"] = _timed(conn, "vacuum (analyze) public.chunks, public.documents")
    return out


def _copy_batch(conn: psycopg.Connection, batch: Any, model: str) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"copy public.documents ({DOC_COLUMNS}) from stdin with (format binary)") as cp:
            cp.set_types(DOC_TYPES)
            for d in batch.documents:
                cp.write_row(
                    [d.id, None, d.external_id, d.title, d.source, d.content_hash, Jsonb(d.metadata)]
                )
        with cur.copy(f"copy public.chunks ({CHUNK_COLUMNS}) from stdin with (format binary)") as cp:
            cp.set_types(CHUNK_TYPES)
            row = 0
            for d in batch.documents:
                for c in d.chunks:
                    cp.write_row(
                        [
                            d.id,
                            None,
                            c.position,
                            c.content,
                            [],
                            c.content_hash,
                            c.content_tokens,
                            batch.vectors[row],
                            model,
                            Jsonb(c.metadata),
                        ]
                    )
                    row += 1


def load_supabase_ref(url: str, dims: int, maintenance_work_mem: str) -> dict[str, Any]:
    """The guide's table in schema supabase_ref, one row per chunk (title + content, same vector).

    bench/supabase_ref.sql creates its HNSW index before any row exists; at this scale that would
    insert row by row, so the index is dropped and rebuilt after the load, as for public.chunks.
    """
    text = supabase_ref.SQL_FILE.read_text(encoding="utf-8")
    if dims != 384:
        text = text.replace("vector(384)", f"vector({dims})")
    with connect(url) as conn:
        conn.execute("drop schema if exists supabase_ref cascade")
        conn.execute(text)
        name, indexdef = conn.execute(
            "select indexname, indexdef from pg_indexes where schemaname = 'supabase_ref' "
            "and indexdef like '%USING hnsw%'"
        ).fetchone()
        conn.execute(sql.SQL("drop index supabase_ref.{}").format(sql.Identifier(name)))
        insert = sql.SQL(
            "insert into supabase_ref.documents (id, content, embedding) overriding system value "
            "select c.id, d.title || E'\\n' || c.content, c.embedding::vector({dims}) "
            "from public.chunks c join public.documents d on d.id = c.document_id order by c.id"
        ).format(dims=sql.Literal(dims))
        out = {"insert_seconds": _timed(conn, insert)}
        conn.execute(sql.SQL("set maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        out["hnsw_build_seconds"] = _timed(conn, indexdef)
        conn.autocommit = True
        out["vacuum_analyze_seconds"] = _timed(conn, "vacuum (analyze) supabase_ref.documents")
    return out


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
    names = (
        "server_version",
        "shared_buffers",
        "work_mem",
        "maintenance_work_mem",
        "effective_cache_size",
        "max_parallel_workers_per_gather",
        "max_parallel_maintenance_workers",
        "jit",
        "random_page_cost",
    )
    with connect(url) as conn:
        out = {n: _scalar(conn, sql.SQL("show {}").format(sql.Identifier(n))) for n in names}
        out["jit_available"] = str(_scalar(conn, "select pg_jit_available()"))
        out["vector"] = _scalar(conn, "select extversion from pg_extension where extname = 'vector'")
    return out


def _scalar(conn: psycopg.Connection, query: Any, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    return row[0] if row else None


def _timed(conn: psycopg.Connection, statement: Any) -> float:
    started = time.perf_counter()
    conn.execute(statement)
    if not conn.autocommit:
        conn.commit()
    seconds = round(time.perf_counter() - started, 2)
    text = statement if isinstance(statement, str) else statement.as_string(conn)
    log(f"  {' '.join(text.split())[:90]}...: {seconds} s")
    return seconds
