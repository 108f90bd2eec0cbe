"""Prewarming the HNSW indexes after a restart (the embedded server ships no pg_prewarm).

After a restart shared_buffers is empty: the first searches of a 1M-chunk corpus read the HNSW
graph (~2 GB) page by page as their walks reach it. pg_prewarm would load the index in one
sequential read, but the embedded server does not ship it (pg_available_extensions); so one search
per index walks the whole graph instead — an iterative scan (`relaxed_order`) allowed to visit every
element, which reads every index page, and the heap rows of the walked tuples, into shared_buffers.
With DATABASE_URL use pg_prewarm (`select pg_prewarm('chunks_embedding_384_hnsw_idx')`).
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg import sql

INDEXES = """
    select i.relname, substring(i.relname from 'chunks_embedding_(\\d+)_hnsw_idx')::int, i.reltuples::bigint
    from pg_class i join pg_index x on x.indexrelid = i.oid join pg_class c on c.oid = x.indrelid
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relname = 'chunks' and i.relname ~ '^chunks_embedding_\\d+_hnsw_idx$'
"""


def prewarm_hnsw(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Walk every HNSW index of public.chunks once; per index: name, elements visited, seconds."""
    out = []
    for name, dims, rows in conn.execute(INDEXES).fetchall():
        if rows <= 0:
            continue
        started = time.perf_counter()
        with conn.transaction():
            for setting, value in (
                ("search_path", "public, extensions"),
                ("hnsw.iterative_scan", "relaxed_order"),
                ("hnsw.max_scan_tuples", str(rows * 2)),
                ("hnsw.ef_search", "100"),
                # the walk keeps what it visited in work_mem x this; at 1 it stopped after 350k of 1M
                ("hnsw.scan_mem_multiplier", "16"),
                ("enable_seqscan", "off"),
                ("enable_sort", "off"),
            ):
                conn.execute("select set_config(%s, %s, true)", (setting, value))
            vector = sql.SQL("embedding::vector({})").format(sql.Literal(int(dims)))
            visited = conn.execute(
                sql.SQL(
                    "select count(*) from (select id from public.chunks where embedding_dims = {d} "
                    "order by {v} <=> (select {v} from public.chunks where embedding_dims = {d} limit 1) "
                    "limit %s) walked"
                ).format(d=sql.Literal(int(dims)), v=vector),
                (rows * 2,),
            ).fetchone()
        out.append(
            {"index": name, "visited": visited[0] if visited else 0, "seconds": time.perf_counter() - started}
        )
    return out
