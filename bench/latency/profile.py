"""Where a slow sweep cell spends its time: hybrid_search's steps timed apart, as the scope's caller.

    python -m bench.latency.profile --size 1000000 --scope tenant-1% --queries 10

For one scope of the selectivity sweep (its identity, filter and narrowing) and the first questions,
as the product calls them (the settings' parameters): the whole `hybrid_search` and
`match_documents` calls, then the steps of `hybrid_search` alone — `hybrid_search_terms` (the query's
terms and statistics), `search_scope_scan` (estimate, count, exact ranking), and under RLS
`hybrid_search_visible_matches` (the full-text leg's GIN match checked against the policies) — p50 of
each; and `EXPLAIN (ANALYZE, BUFFERS)` of the whole `hybrid_search` call for the median question
(a plpgsql function's statements are counted in its node: shared hit / read of everything it did).
Written to bench/results/profile-<size>-<scope>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
from psycopg.types.json import Jsonb

from backend.db.connection import connect
from backend.db.identity import apply_identity
from backend.retrieval.params import HYBRID, MATCH, HybridParams
from bench.common import RESULTS_DIR, log
from bench.common.db import bench_server, with_database
from bench.common.report import write_json
from bench.common.synthetic import SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.server import latency_settings
from bench.latency.sweep import scopes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--scope", default="tenant-1%")
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--selectivity", type=float, nargs="+", default=[0.0001, 0.001, 0.01, 0.02, 0.1, 0.5])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = latency_settings()
    params = HybridParams.from_settings(settings)
    (scope,) = [s for s in scopes(args.selectivity) if s.label == args.scope]
    queries = load_queries(SentencePool.load(), 384, args.seed, args.queries)
    url = with_database(bench_server(), bulk_load.database_name(args.size, 384))
    hybrid_args = params.sql_args(HYBRID)
    match_args = params.sql_args(MATCH)
    k = settings.rag_prefetch_k
    leg = params.candidate_count or max(4 * k, 40)
    named = ", ".join(f"{name} => %({name})s" for name in hybrid_args)
    named_match = ", ".join(f"{name} => %({name})s" for name in match_args)
    statements = {
        "hybrid_search": f"select * from hybrid_search(%(text)s, %(vec)s, %(k)s, filter => %(filter)s, "
        f"collections => %(collections)s, {named})",
        "match_documents": "select * from match_documents(query_embedding => %(vec)s, match_count => %(k)s, "
        "filter => %(filter)s, collections => %(collections)s, " + named_match + ")",
        "hybrid_search_terms": "select * from hybrid_search_terms(%(text)s, %(common_term_ratio)s, "
        "%(common_term_min_df)s, %(match_df_budget)s)",
        "search_scope_scan": "select s.scope_count from search_scope_scan(%(exact_scan_threshold)s, "
        "%(vec)s, 384, null, %(leg)s, collections => %(collections)s, containment => %(filter)s) s",
    }
    if scope.identity is not None:
        statements["hybrid_search_visible_matches"] = (
            "select count(*) from hybrid_search_visible_matches((select t.match_query from "
            "hybrid_search_terms(%(text)s, %(common_term_ratio)s, %(common_term_min_df)s, "
            "%(match_df_budget)s) t), "
            "collections => %(collections)s)"
        )
    times: dict[str, list[float]] = {name: [] for name in statements}
    with connect(url, autocommit=True) as conn:
        for q in queries:
            values = {
                **hybrid_args,
                "text": q.terms,
                "vec": q.vector,
                "k": k,
                "leg": leg,
                "filter": Jsonb(scope.filter),
                "collections": scope.collections,
                **match_args,
            }
            for name, statement in statements.items():
                with conn.transaction():
                    if scope.identity is not None:
                        apply_identity(conn, scope.identity, statement_timeout_ms=60_000)
                    started = time.perf_counter()
                    conn.execute(statement, values).fetchall()
                    times[name].append((time.perf_counter() - started) * 1000)
        median = queries[int(np.argsort(times["hybrid_search"])[len(queries) // 2])]
        values = {
            **hybrid_args,
            "text": median.terms,
            "vec": median.vector,
            "k": k,
            "leg": leg,
            "filter": Jsonb(scope.filter),
            "collections": scope.collections,
            **match_args,
        }
        with conn.transaction():
            if scope.identity is not None:
                apply_identity(conn, scope.identity, statement_timeout_ms=60_000)
            plan = conn.execute(
                "explain (analyze, buffers, format json) " + statements["hybrid_search"],
                values,
            ).fetchone()
    p50 = {name: round(float(np.median(t)), 2) for name, t in times.items()}
    node = plan[0][0]["Plan"] if plan else {}
    buffers = {key: node.get(key) for key in ("Shared Hit Blocks", "Shared Read Blocks", "Actual Total Time")}
    for name, value in p50.items():
        log(f"  {args.scope:22s} {name:32s} p50 {value} ms")
    log(f"  EXPLAIN (ANALYZE, BUFFERS) hybrid_search, median question: {buffers}")
    record = {
        "size": args.size,
        "scope": args.scope,
        "queries": args.queries,
        "params": dataclasses.asdict(params),
        "p50_ms": p50,
        "explain_median": buffers,
        "explain_plan": plan[0] if plan else None,
    }
    safe = args.scope.replace("%", "pct").replace(" ", "-")
    write_json(args.out_dir / f"profile-{args.size}-{safe}.json", record)
    print(json.dumps({"p50_ms": p50, "explain": buffers}, indent=1))


if __name__ == "__main__":
    main()
