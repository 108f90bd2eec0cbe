"""Where the cluster's top 10 differs from one node's, on the databases bench.distributed.latency loaded.

Usage: .venv/bin/python -m bench.distributed.exactness --size 100000 --shards 8 [--queries 100]

hybrid_search as the backend role (every tenant: a fan-out over every shard), the same questions on
both sides, top 10 compared row for row:
  full-text only        the GIN leg, the statistics and the fusion: exact on both sides;
  hybrid, ef_search N   the vector leg walks HNSW: one graph on one node, one per shard on the cluster,
                        each approximate, so the two can disagree where a graph misses a neighbour;
  hybrid, exact vector  index scans off and priced out (SET LOCAL, which Citus sends to the workers):
                        the vector leg is an exact sort on both sides.
Needs both databases loaded (bench.distributed.latency --load-only) and the cluster running.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import psycopg

from backend.cluster.nodes import load_cluster
from backend.config import get_settings
from bench.common import DATASETS_DIR, RESULTS_DIR, log
from bench.common.db import bench_server, with_database
from bench.common.report import run_record, write_json
from bench.common.synthetic import SentencePool, load_queries
from bench.latency.plans import vector_literal

MODEL = "multilingual-e5-small@384"
SEARCH = (
    "select content, position from hybrid_search(%(terms)s, %(vector)s::vector, 10, "
    "full_text_weight => %(ftw)s, semantic_weight => %(sw)s, query_embedding_model => %(model)s, "
    "ef_search => %(ef)s, filtered_ef_search => %(ef)s)"
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    cluster = load_cluster(get_settings().cluster_dir)
    if cluster is None or not cluster.running(cluster.coordinator):
        raise SystemExit("no cluster running: start one with python -m backend cluster up")
    name = f"bench_latency_{args.size}_384"
    urls = (with_database(bench_server(), name), with_database(cluster.url(), f"{name}_s{args.shards}"))
    pool = SentencePool.load(args.datasets_dir)
    queries = load_queries(pool, 384, args.seed, args.queries, args.datasets_dir)
    variants = (
        ("full-text only", 1.0, 0.0, 40, False),
        ("hybrid, ef_search 40", 1.0, 1.0, 40, False),
        ("hybrid, ef_search 1000", 1.0, 1.0, 1000, False),
        ("hybrid, exact vector leg", 1.0, 1.0, 40, True),
    )
    report = {**run_record("bench.distributed.exactness"), "size": args.size, "shards": args.shards}
    results = []
    with psycopg.connect(urls[0]) as single, psycopg.connect(urls[1]) as on_cluster:
        for label, ftw, sw, ef, exact in variants:
            same = 0
            for q in queries:
                params = {
                    "terms": q.terms,
                    "vector": vector_literal(q.vector),
                    "ftw": ftw,
                    "sw": sw,
                    "model": MODEL,
                    "ef": ef,
                }
                rows = []
                for conn in (single, on_cluster):
                    with conn.transaction():
                        conn.execute("set local search_path = public, extensions")
                        if exact:
                            # A walked statement turns sorting off (one node since migration 029, the
                            # cluster since search_parts_walkable): with index scans off too, both
                            # plans have one disabled node and the cheaper, the HNSW walk, would win.
                            # Priced out of reach, the index loses to the exact sort on both sides.
                            conn.execute("set local enable_indexscan = off")
                            conn.execute("set local random_page_cost = 1000000")
                        rows.append(conn.execute(SEARCH, params).fetchall())
                same += rows[0] == rows[1]
            results.append({"search": label, "queries": len(queries), "same_top10": same})
            log(f"  {label}: same top 10 for {same}/{len(queries)}")
    report["results"] = results
    write_json(args.out_dir / f"distributed-exactness-{args.size}-s{args.shards}.json", report)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
