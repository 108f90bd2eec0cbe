"""The latency benchmark's synthetic corpus on the cluster: the same documents, chunks and vectors
bench/latency/load.py writes to one node, in a distributed database.

A database per size on the running cluster (`bench_latency_<size>_<dims>`, migrated and distributed,
reused like the single-node one: the load's record sits in the database comment once complete).
Rows are binary-COPYed through the coordinator, which routes each to its tenant's shard: documents
and chunks name their tenant_id (the bench owners are users; the backend role writing for them must
say whose rows these are, sql/citus/distribute.sql), the chunk trigger copies access and dates from
the document on the shard, as for every write. The term-statistics insert trigger rests during the
load and refresh_term_stats() rebuilds them at the end (per tenant, on every shard at once); then
ANALYZE and the HNSW index, built shard by shard on the workers.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from backend.cluster.nodes import Cluster
from backend.db import migrations
from backend.db.connection import connect
from backend.db.distribute import distribute
from bench.common import log
from bench.common.db import scalar, timed
from bench.common.synthetic import Batch, SyntheticCorpus
from bench.latency.load import database_name

PUBLIC_TENANT = uuid.UUID(int=0)
DOCUMENTS = (
    "copy public.documents (id, tenant_id, owner_id, external_id, title, source, content_hash, metadata) "
    "from stdin with (format binary)"
)
CHUNKS = (
    "copy public.chunks (tenant_id, document_id, owner_id, position, content, heading_path, content_hash, "
    "content_tokens, embedding, embedding_model, metadata) from stdin with (format binary)"
)


def open_database(
    cluster: Cluster, size: int, dims: int, *, shards: int, reuse: bool, expect: dict[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """(url, the previous load's record) when reusable; else a fresh distributed database and None."""
    name = cluster_database_name(size, dims, shards)
    with psycopg.connect(cluster.coordinator.url("postgres"), autocommit=True) as conn:
        row = conn.execute(
            "select shobj_description(oid, 'pg_database') from pg_database where datname = %s", (name,)
        ).fetchone()
    record = json.loads(row[0]) if row and row[0] else None
    if reuse and record and record.get("fingerprint") == {**expect, "shards": shards}:
        log(f"reusing cluster database {name}")
        return cluster.url(name), record
    cluster.drop_database(name)
    url = cluster.create_database(name)
    migrations.upgrade(url)
    distribute(url, shard_count=shards, log=lambda _m: None)
    return url, None


def cluster_database_name(size: int, dims: int, shards: int) -> str:
    """One database per size and shard count (a 32-shard load and an 8-shard one side by side)."""
    return f"{database_name(size, dims)}_s{shards}"


def save_record(cluster: Cluster, size: int, dims: int, shards: int, record: dict[str, Any]) -> None:
    name = cluster_database_name(size, dims, shards)
    text = sql.Literal(json.dumps(record, default=str))
    with psycopg.connect(cluster.url(name), autocommit=True) as conn:
        conn.execute(sql.SQL("comment on database {} is {}").format(sql.Identifier(name), text))


def load(
    url: str, corpus: SyntheticCorpus, *, model: str, batch_chunks: int, maintenance_work_mem: str
) -> dict:
    index = f"chunks_embedding_{corpus.dims}_hnsw_idx"
    out: dict[str, Any] = {"batch_chunks": batch_chunks, "maintenance_work_mem": maintenance_work_mem}
    with connect(url) as conn:
        indexdef = scalar(
            conn, "select indexdef from pg_indexes where schemaname = 'public' and indexname = %s", (index,)
        )
        conn.execute(sql.SQL("drop index public.{}").format(sql.Identifier(index)))
        conn.execute("alter table public.chunks disable trigger chunks_term_stats_insert")
        conn.commit()
        generate = copy = 0.0
        loaded = 0
        for batch in corpus.batches(batch_chunks):
            generate += batch.seconds
            started = time.perf_counter()
            _copy_batch(conn, batch, model)
            conn.commit()
            copy += time.perf_counter() - started
            loaded += batch.chunk_count
            log(f"  cluster: {loaded}/{corpus.size} chunks (copy {copy:.1f} s, generate {generate:.1f} s)")
        out.update(generate_seconds=round(generate, 2), copy_seconds=round(copy, 2))
        out["refresh_term_stats_seconds"] = timed(conn, "select public.refresh_term_stats()")
        conn.execute("alter table public.chunks enable trigger chunks_term_stats_insert")
        conn.commit()
        out["analyze_seconds"] = timed(conn, "analyze public.chunks, public.documents")
        # Citus builds the index on every shard, several shards at once over its connections; each
        # worker's maintenance_work_mem applies (set in the cluster's node configuration) to each build,
        # so at most two builds per worker run at once (2 x maintenance_work_mem of memory per worker).
        conn.execute("set citus.max_adaptive_executor_pool_size = 2")
        out["hnsw_index_definition"] = indexdef
        out["hnsw_build_seconds"] = timed(conn, indexdef)
        conn.autocommit = True
        out["vacuum_analyze_seconds"] = timed(conn, "vacuum (analyze) public.chunks, public.documents")
    return out


def _copy_batch(conn: psycopg.Connection, batch: Batch, model: str) -> None:
    def tenant(owner: uuid.UUID | None) -> uuid.UUID:
        return owner or PUBLIC_TENANT

    with conn.cursor() as cur, cur.copy(DOCUMENTS) as copy:
        copy.set_types(["uuid", "uuid", "uuid", "text", "text", "text", "text", "jsonb"])
        for d in batch.documents:
            copy.write_row(
                [
                    d.id,
                    tenant(d.owner_id),
                    d.owner_id,
                    d.external_id,
                    d.title,
                    d.source,
                    d.content_hash,
                    Jsonb(d.metadata),
                ]
            )
    with conn.cursor() as cur, cur.copy(CHUNKS) as copy:
        copy.set_types(
            ["uuid", "uuid", "uuid", "int4", "text", "text[]", "text", "text", "vector", "text", "jsonb"]
        )
        for d, (_, chunks) in zip(batch.documents, batch.rows(), strict=True):
            for c in chunks:
                copy.write_row(
                    [
                        tenant(d.owner_id),
                        d.id,
                        d.owner_id,
                        c.position,
                        c.content,
                        list(c.heading_path),
                        c.content_hash,
                        c.content_tokens,
                        c.embedding,
                        model,
                        Jsonb(c.metadata),
                    ]
                )
