"""Recall@10 of sweep cells on many questions, against the exact plan of the same function.

    python -m bench.latency.recall --size 1000000 --queries 400 --scopes unfiltered "selectivity 0.5"

The selectivity sweep measures each cell's recall on --sweep-recall-queries questions (20 in the
documented runs): one question the walk loses moves it by 0.05, and at 1M the figure of one cell
moved between 0.90 and 0.94 from run to run. This runs the sweep's own measure (`sweep.recall`: the
function as the product calls it, against the same function with the exact plan forced, under the
same identity and filter) on as many of the sweep's questions as asked, for the cells named — for
`hybrid_search` the fused top 10, which `bench.latency.tune` (its vector leg against a brute-force
truth) does not measure. On bench/latency's kept 384-d database of that size; the exact plan of a 1M scope
takes ~0.8 s a question. Written to bench/results/recall-<size>[-label].json and .md; give it to
`python -m bench.latency.targets --recall` with the tune reports.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from backend.db import migrations
from backend.db.connection import connect
from backend.db.ship_sql import apply_sql_folder
from backend.retrieval.params import HYBRID, MATCH
from bench.common import RESULTS_DIR, log
from bench.common.db import bench_server, with_database
from bench.common.report import run_record, write_records
from bench.common.synthetic import SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.server import latency_settings
from bench.latency.sweep import recall, scopes
from bench.latency.tune import MODEL

# Records of this tool judge both functions in bench.latency.targets (tune's: match_documents only).
TRUTH = "exact plan"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument(
        "--queries", type=int, default=400, help="the first N of the sweep's questions (its --queries: 400)"
    )
    parser.add_argument("--sweep-queries", type=int, default=400, help="the sweep's --queries")
    parser.add_argument("--scopes", nargs="+", default=["unfiltered"], help="cells' scope labels")
    parser.add_argument("--selectivity", type=float, nargs="+", default=[0.0001, 0.001, 0.01, 0.02, 0.1, 0.5])
    parser.add_argument("--functions", nargs="+", choices=(MATCH, HYBRID), default=[HYBRID, MATCH])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--label", default="", help="suffix of the output files")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    known = {s.label for s in scopes(args.selectivity)}
    unknown = [s for s in args.scopes if s not in known]
    if unknown:
        parser.error(f"unknown scope {unknown[0]!r}; the sweep's are: {', '.join(sorted(known))}")
    if not 1 <= args.queries <= args.sweep_queries:
        parser.error(f"--queries must be between 1 and --sweep-queries ({args.sweep_queries})")
    return args


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    url = with_database(bench_server(), bulk_load.database_name(args.size, 384))
    with connect(url) as conn:  # the functions sql/ defines now, as the sweep's --reuse does
        apply_sql_folder(conn, migrations.SQL_DIR)
        conn.commit()
    settings = latency_settings()
    questions = load_queries(SentencePool.load(), 384, args.seed, args.sweep_queries)[: args.queries]
    records = []
    for scope in (s for s in scopes(args.selectivity) if s.label in args.scopes):
        for function in args.functions:
            got = recall(url, settings, MODEL, function, scope, questions)
            record = {
                "size": args.size,
                "scope": scope.label,
                "function": function,
                "variant": f"ef={settings.rag_hnsw_ef_search}",
                "truth": TRUTH,
                **got,
            }
            log(f"  {scope.label:22s} {function:16s} recall@10 {got['recall_at_10']} ({len(questions)} q)")
            records.append(record)
    return records


def render(records: list[dict[str, Any]]) -> str:
    lines = [
        "| scope | function | recall@10 | questions | exact plan p50 ms |",
        "|---|---|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r['scope']} | `{r['function']}` | {r['recall_at_10']} | {r['recall_queries']} "
            f"| {r['exact_p50_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run = run_record("bench.latency.recall")
    records = measure(args)
    write_records(run, args, "recall", records, render(records))


if __name__ == "__main__":
    main()
