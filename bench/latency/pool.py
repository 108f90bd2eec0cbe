"""Throughput of many clients over as many connections, or through a pool of fewer.

    python -m bench.latency.pool --size 1000000 --pools 2 3 4 --rounds 2

On a machine whose cores the clients and the server share, c closed-loop clients on c connections
keep c server processes runnable on a few cores, and each query then costs more processor time than
it does alone (caches, switches). This measures, on bench/latency's kept database of that size,
unfiltered `match_documents` and `hybrid_search` as the product calls them: c=1 on its own connection,
c=--clients on as many connections, and c=--clients through a psycopg pool of each size in --pools (the
product's pool, backend.db.connection.create_pool; DB_POOL_MAX_SIZE is its size), in rounds, the
variants in the same order each round. Per variant: QPS, p50 / p95, the cores busy and the processor
time per query of the client and of the rest of the machine (bench.latency.cells). Written to
bench/results/pool-<size>[-label].json and .md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from backend.db.connection import create_pool
from backend.retrieval.params import HYBRID, MATCH
from bench.common import RESULTS_DIR, log
from bench.common.db import bench_server, with_database
from bench.common.report import run_record, write_records
from bench.common.synthetic import Query, SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.cells import CPU_KEYS, RunnerFactory, product_call, run_cell, sql_runner
from bench.latency.server import latency_settings
from bench.latency.tune import MODEL


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--pools", type=int, nargs="+", default=[2, 3, 4], help="pool sizes to try")
    parser.add_argument("--functions", nargs="+", choices=(MATCH, HYBRID), default=[MATCH, HYBRID])
    parser.add_argument("--seconds", type=float, default=6.0, help="per variant and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--label", default="", help="suffix of the output files")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.clients < 2 or min(args.pools) < 1 or args.rounds < 1:
        parser.error("--clients must be at least 2, --pools and --rounds at least 1")
    return args


def pooled(url: str, size: int, function: str) -> tuple[RunnerFactory, Callable[[], None]]:
    """A runner factory whose runners share one pool of `size` connections, and the pool's close."""
    settings = latency_settings()
    pool = create_pool(url, settings.model_copy(update={"db_pool_min_size": size, "db_pool_max_size": size}))
    call = product_call(settings, MODEL, function)

    def run(q: Query) -> Any:
        with pool.connection() as conn:
            return call(conn, q)

    return (lambda: (run, lambda: None)), pool.close


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    url = with_database(bench_server(), bulk_load.database_name(args.size, 384))
    queries = load_queries(SentencePool.load(), 384, args.seed, args.queries)
    records = []
    for function in args.functions:
        own = sql_runner(url, latency_settings(), MODEL, function, False)
        variants: list[tuple[str, int, int | None]] = [
            ("c=1", 1, None),
            (f"c={args.clients}", args.clients, None),
        ]
        variants += [(f"c={args.clients}, pool {n}", args.clients, n) for n in args.pools]
        cells: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
        for _ in range(args.rounds):
            for name, clients, size in variants:
                factory, close = (own, lambda: None) if size is None else pooled(url, size, function)
                try:
                    cell = run_cell(
                        function,
                        factory,
                        queries,
                        filtered=False,
                        concurrency=clients,
                        seconds=args.seconds,
                        max_queries=1_000_000,
                    )
                finally:
                    close()
                cells[name].append(cell.summary())
        alone = float(np.median([s["qps"] or 0.0 for s in cells["c=1"]]))
        for name, clients, size in variants:
            got = cells[name]
            qps = float(np.median([s["qps"] or 0.0 for s in got]))
            record = {
                "size": args.size,
                "function": function,
                "variant": name,
                "clients": clients,
                "pool": size,
                "qps": round(qps, 1),
                "qps_per_round": [s["qps"] for s in got],
                "over_c1": round(qps / alone, 2) if alone else None,
                "p50_ms": round(float(np.median([s["p50_ms"] for s in got])), 2),
                "p95_ms": round(float(np.median([s["p95_ms"] for s in got])), 2),
                **{k: _median(s[k] for s in got) for k in CPU_KEYS},
            }
            log(f"  {function:16s} {name:18s} QPS {record['qps']:>7}  {record['over_c1']}x c=1")
            records.append(record)
    return records


def _median(values: Any) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.median(known)), 3) if known else None


def render(records: list[dict[str, Any]]) -> str:
    lines = [
        "| function | variant | QPS (per round) | × c=1 | p50 / p95 ms | cores busy "
        "| CPU ms a query: client / rest |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| `{r['function']}` | {r['variant']} "
            f"| {r['qps']} ({' / '.join(str(q) for q in r['qps_per_round'])}) "
            f"| {r['over_c1']}× | {r['p50_ms']} / {r['p95_ms']} | {r['busy_cores']} "
            f"| {r['client_cpu_ms']} / {r['server_cpu_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run = run_record("bench.latency.pool")
    records = measure(args)
    write_records(run, args, "pool", records, render(records))


if __name__ == "__main__":
    main()
