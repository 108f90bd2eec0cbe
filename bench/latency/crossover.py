"""Where the exact plan of a user's scope stops paying, measured on the sweep's own scopes.

    python -m bench.latency.crossover --size 100000 --queries 20

On bench/latency's kept database of that size (load it first: `python -m bench.latency --sizes N
--keep-db ...`), for every tenant and collection scope of the selectivity sweep (a signed-in user,
through RLS, no filter: what migrations 029 / 039 read in one pass of the scope's vectors), each question
runs back to back in alternating order as
    exact    exact_scan_threshold 1,000,000: the scope counted and ranked exactly
    heap     the same with a filter every chunk passes (created_at after 1900): the filtered path,
             which reads what it ranks from the heap rows (primary key, row, TOAST) as every exact
             plan did before 029 — the before/after of the storage, in the same run
    hnsw     exact_scan_threshold 0: the HNSW walk with an iterative scan
    planned  exact_scan_threshold --threshold: what the product does (estimate, count, choose)
through match_documents and hybrid_search, each asking for --match-count rows (the product's
RAG_PREFETCH_K by default; earlier runs asked for 10). Reported per scope: p50 / p95 of each,
exact / hnsw p50, and the exact plan's cost per admitted chunk (p50 over the admitted count). Written to
bench/results/crossover-<size>.json and .md.

--filtered measures metadata-filtered scopes instead (as the tables' owner, no RLS) of 0.03-2 % of
the chunks: the sweep's uniform "sel" draws alone and combined with a source dataset (FILTERED below),
or the filters given with --filter (JSON, repeatable: a corpus of another size wants other shares).
Their exact plan is the filtered one (search_scope_scan's bounded count on chunk_scope_vectors with
the distances in the same pass since migration 044), so "heap" is skipped for them; hnsw and planned
report recall@10 against exact.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from backend.db import migrations
from backend.db.connection import connect
from backend.db.identity import apply_identity
from backend.db.ship_sql import apply_sql_folder
from bench.common import RESULTS_DIR, bench_settings, log
from bench.common.db import bench_server, with_database
from bench.common.report import write_json
from bench.common.synthetic import SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.sweep import Scope, admitted, scopes

EXACT, HNSW = 1_000_000, 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=20, help="questions per scope")
    parser.add_argument("--threshold", type=int, default=3000, help="the 'planned' variant's threshold")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--scopes", nargs="+", default=None, help="only these scopes (labels)")
    parser.add_argument(
        "--variants", nargs="+", default=["exact", "heap", "hnsw", "planned"], help="a subset to time"
    )
    parser.add_argument(
        "--match-count",
        type=int,
        default=bench_settings().rag_prefetch_k,
        help="rows each call asks for (default: the product's RAG_PREFETCH_K, as a search asks)",
    )
    parser.add_argument("--filtered", action="store_true", help="the filtered scopes instead")
    parser.add_argument(
        "--filter",
        dest="filters",
        type=json.loads,
        action="append",
        default=None,
        help="with --filtered: this filter (JSON) instead of the built-in list; repeatable",
    )
    parser.add_argument("--label", default="", help="suffix of the output files")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args(argv)


ALWAYS = Jsonb({"created_at": {"$gte": "1900-01-01"}})  # every chunk passes: the filtered (heap) path
# Filtered scopes between the sweep's selectivities: the uniform "sel" draw of 1 % / 2 % / 10 % with a
# source dataset (shares at 1M: dureader 73 %, drcd 14 %, cmrc 6.3 %, xquad-en 3.3 %, xquad-zh 3.0 %).
FILTERED = (
    {"sel": ["0.01"], "source": "xquad-zh-dev"},
    {"sel": ["0.01"], "source": "cmrc2018-dev"},
    {"sel": ["0.001"]},
    {"sel": ["0.01"], "source": "drcd-dev"},
    {"sel": ["0.02"], "source": "drcd-dev"},
    {"sel": ["0.1"], "source": "xquad-en-dev"},
    {"sel": ["0.1"], "source": "cmrc2018-dev"},
    {"sel": ["0.01"], "source": "dureader-checklist-dev"},
    {"sel": ["0.01"]},
    {"sel": ["0.1"], "source": "drcd-dev"},
    {"sel": ["0.02"]},
)


def filtered_scopes(filters: list[dict[str, Any]] | None = None) -> list[Scope]:
    return [Scope("filter " + json.dumps(f, ensure_ascii=False), f, None) for f in filters or FILTERED]


def call(
    conn: psycopg.Connection,
    scope: Scope,
    function: str,
    query: Any,
    variant: str,
    threshold: int,
    match_count: int,
) -> tuple[float, list[int]]:
    tree = ALWAYS if variant == "heap" else Jsonb(scope.filter)
    if function == "match_documents":
        statement = (
            "select id from match_documents(%s, %s, -1, %s, exact_scan_threshold => %s, collections => %s)"
        )
        params: tuple = (query.vector, match_count, tree, threshold, scope.collections)
    else:
        statement = (
            "select id from hybrid_search(%s, %s, %s, filter => %s, exact_scan_threshold => %s, "
            "collections => %s)"
        )
        params = (query.terms, query.vector, match_count, tree, threshold, scope.collections)
    started = time.perf_counter()
    with conn.transaction():
        if scope.identity is not None:
            apply_identity(conn, scope.identity)
        ids = [row[0] for row in conn.execute(statement, params).fetchall()]
    return (time.perf_counter() - started) * 1000, ids


def measure(url: str, queries: list, args: argparse.Namespace) -> list[dict[str, Any]]:
    every = {"exact": EXACT, "heap": EXACT, "hnsw": HNSW, "planned": args.threshold}
    records = []
    users = [s for s in scopes([], tenants=True) if s.identity is not None]
    chosen = filtered_scopes(args.filters) if args.filtered else users
    with connect(url, autocommit=True) as conn:
        for scope in chosen:
            if args.scopes and scope.label not in args.scopes:
                continue
            variants = {n: every[n] for n in args.variants if not (n == "heap" and scope.identity is None)}
            count = admitted(url, scope)
            for function in ("match_documents", "hybrid_search"):
                for query in queries[:2]:
                    for name, threshold in variants.items():
                        call(conn, scope, function, query, name, threshold, args.match_count)
                times: dict[str, list[float]] = {name: [] for name in variants}
                recalls: dict[str, list[float]] = {name: [] for name in variants}
                for i, query in enumerate(queries):
                    got = {}
                    for name in list(variants) if i % 2 == 0 else list(reversed(variants)):
                        ms, got[name] = call(
                            conn, scope, function, query, name, variants[name], args.match_count
                        )
                        times[name].append(ms)
                    want = set(got.get("exact", [])[:10])
                    for name, ids in got.items():
                        if want:
                            recalls[name].append(len(want.intersection(ids[:10])) / len(want))
                p50 = {name: float(np.median(t)) for name, t in times.items()}
                record = {
                    "size": args.size,
                    "scope": scope.label,
                    "admitted": count,
                    "function": function,
                    "match_count": args.match_count,
                    **{f"{name}_p50_ms": round(p50[name], 2) for name in every if name in p50},
                    **{f"{name}_p95_ms": round(float(np.percentile(t, 95)), 2) for name, t in times.items()},
                    **{f"{name}_recall": round(float(np.mean(r)), 3) for name, r in recalls.items() if r},
                    "loadavg": os.getloadavg()[0],
                }
                if "exact" in p50 and "hnsw" in p50:
                    record["exact_over_hnsw_p50"] = round(p50["exact"] / p50["hnsw"], 2)
                if "exact" in p50:
                    record["exact_us_per_admitted_chunk"] = round(p50["exact"] * 1000 / max(count, 1), 2)
                if "heap" in p50:
                    record["heap_us_per_admitted_chunk"] = round(p50["heap"] * 1000 / max(count, 1), 2)
                if "heap" in p50 and "exact" in p50:
                    record["heap_over_exact_p50"] = round(p50["heap"] / p50["exact"], 2)
                log(str(record))
                records.append(record)
    return records


def render(records: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"# The exact plan of a user's scope vs HNSW, {args.size:,} chunks",
        "",
        f"`python -m bench.latency.crossover --size {args.size} --queries {args.queries}`; the three "
        f"variants back to back in alternating order; planned = exact_scan_threshold {args.threshold:,}; "
        f"load average at the end {tuple(round(x, 2) for x in os.getloadavg())}.",
        "",
        "| scope | admitted | function | exact p50 / p95 | heap (before 029) p50 / p95 "
        "| hnsw p50 / p95 (recall@10) | planned p50 / p95 (recall@10) | exact / hnsw p50 "
        "| µs per admitted chunk: exact / heap |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        g = r.get
        lines.append(
            f"| {r['scope']} | {r['admitted']:,} | {r['function']} "
            f"| {g('exact_p50_ms', '—')} / {g('exact_p95_ms', '—')} "
            f"| {g('heap_p50_ms', '—')} / {g('heap_p95_ms', '—')} "
            f"| {g('hnsw_p50_ms', '—')} / {g('hnsw_p95_ms', '—')} ({g('hnsw_recall', '—')}) "
            f"| {g('planned_p50_ms', '—')} / {g('planned_p95_ms', '—')} ({g('planned_recall', '—')}) "
            f"| {g('exact_over_hnsw_p50', '—')}× | {g('exact_us_per_admitted_chunk', '—')} / "
            f"{g('heap_us_per_admitted_chunk', '—')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    pool = SentencePool.load()
    queries = load_queries(pool, args.dims, args.seed, args.queries)
    url = with_database(bench_server(), bulk_load.database_name(args.size, args.dims))
    with connect(url) as conn:  # the functions sql/ defines now, as --reuse does
        apply_sql_folder(conn, migrations.SQL_DIR)
        conn.commit()
    records = measure(url, queries, args)
    path = args.out_dir / f"crossover-{args.size}{'-' + args.label if args.label else ''}.md"
    write_json(path.with_suffix(".json"), {"records": records, "threshold": args.threshold})
    path.write_text(render(records, args), encoding="utf-8")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
