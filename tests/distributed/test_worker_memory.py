"""A long session that writes chunks keeps its memory on the workers.

A chunk's trigger runs on the chunk's shard and reads its document from the co-located shard with the
row's tenant as a parameter. Citus before citusdata/citus#8824 (merged September 2026; our build,
a3d5708a6ae8, predates it) keeps one more local plan in the statement's generic plan at every
execution whose shard is pruned at run time, so a worker backend that inserted chunks through a
pooled connection grew by ~56 kB per chunk: the 1M-chunk benchmark load was killed by the kernel at
460k chunks, one worker's COPY backend holding 3.8 GB. The trigger functions of sql/citus/ plan every
execution (`plan_cache_mode = force_custom_plan`, checked on every file by tests/test_citus_mirrors.py);
this test holds the cluster to it.
"""

from __future__ import annotations

import uuid

import psycopg

from backend.cluster.nodes import Cluster
from bench.common.db import scalar

INSERTS = 300
CHUNK = (
    "insert into public.chunks (tenant_id, document_id, owner_id, position, content, content_hash, "
    "content_tokens, embedding, embedding_model) "
    "values (%s, %s, %s, %s, 'x', %s, 'x', %s::vector, 'memory-test@4')"
)
CACHED_PLANS = (
    "select coalesce(sum(total_bytes), 0) from pg_backend_memory_contexts where name = 'CachedPlan'"
)


def test_a_worker_session_inserting_chunks_does_not_grow(cluster: Cluster, db: psycopg.Connection):
    tenant = uuid.uuid4()
    document = uuid.uuid4()
    db.execute(
        "insert into public.documents (id, tenant_id, owner_id, external_id, title, source, content_hash) "
        "values (%s, %s, %s, 'memory', 'memory', 'test', 'h')",
        (document, tenant, tenant),
    )
    port = scalar(
        db,
        "select s.nodeport from citus_shards s where s.table_name = 'public.chunks'::regclass "
        "and s.shardid = get_shard_id_for_distribution_column('public.chunks', %s)",
        (tenant,),
    )
    name = scalar(db, "select current_database()")
    worker = next(w for w in cluster.workers if w.port == port)
    # On the shard's own node the insert runs locally: its trigger runs in this backend.
    with psycopg.connect(worker.url(name), autocommit=True) as conn:
        sizes = []
        for position in range(INSERTS):
            conn.execute(CHUNK, (tenant, document, tenant, position, f"h{position}", "[1,0,0,0]"))
            if position in (20, INSERTS - 1):
                sizes.append(scalar(conn, CACHED_PLANS))
        assert conn.execute(
            "select count(*) from public.chunks where tenant_id = %s and document_id = %s", (tenant, document)
        ).fetchone() == (INSERTS,)
    grown = sizes[1] - sizes[0]
    assert grown < 64 * 1024, f"cached plans grew by {grown} bytes over {INSERTS - 21} inserts"
