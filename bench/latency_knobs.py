"""What would make hybrid_search fast: its knobs, and variants of its statement, on a kept latency database.

Usage: .venv/bin/python -m bench.latency_knobs --size 100000 [--dims 384] [--queries 200]
       (after `python -m bench.latency --sizes 100000 --reuse` left the database in place)

1. Knobs (no code change): hybrid_search over real questions at concurrency 1 with other
   common_term_ratio / common_term_min_df values, and with one leg switched off; p50/p95/p99 and how
   many of the default's top 15 each setting keeps.
2. Statement variants for the slowest questions (EXPLAIN ANALYZE, median of 3): as shipped; with the
   per-row BM25 subquery replaced by one ts_rank call (what the per-term scoring costs); with
   sequential scans disabled (what the planner's choice costs).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from backend.db.connection import connect
from backend.db.embedded import start_embedded_server
from bench.bulk_load import database_name
from bench.common import BENCH_SERVER_DIR, RESULTS_DIR, log, markdown_table, with_database, write_json
from bench.latency import MODELS
from bench.latency_plans import EXECUTE, PARAM_TYPES, TERMS_SQL, vector_literal
from bench.synthetic import Query, SentencePool, load_queries

KNOBS = [
    ("shipped defaults (ratio 0.1, min_df 5000)", {}),
    ("common_term_ratio 0.02, min_df 0", {"common_term_ratio": 0.02, "common_term_min_df": 0}),
    ("common_term_ratio 0.005, min_df 0", {"common_term_ratio": 0.005, "common_term_min_df": 0}),
    ("full-text leg only (semantic_weight 0)", {"semantic_weight": 0.0}),
    ("vector leg only (full_text_weight 0)", {"full_text_weight": 0.0}),
]
PER_TERM_SCORE = re.compile(
    r"\(select sum\(w\.idf \* ts_rank\(c\.fts, w\.q\)\)\s+from unnest\(\$12::tsquery\[\], \$13::float8\[\]\) "
    r"as w\(q, idf\)\)"
)


def call(conn: psycopg.Connection, q: Query, model: str, knobs: dict[str, Any]) -> list[int]:
    params = {
        "query_text": q.terms,
        "query_embedding": q.vector,
        "model": model,
        "full_text_weight": 1.0,
        "semantic_weight": 1.0,
        "common_term_ratio": 0.1,
        "common_term_min_df": 5000,
        **knobs,
    }
    rows = conn.execute(
        "select id from hybrid_search(query_text => %(query_text)s, query_embedding => %(query_embedding)s, "
        "match_count => 15, full_text_weight => %(full_text_weight)s, "
        "semantic_weight => %(semantic_weight)s, "
        "query_embedding_model => %(model)s, common_term_ratio => %(common_term_ratio)s, "
        "common_term_min_df => %(common_term_min_df)s)",
        params,
    ).fetchall()
    return [r[0] for r in rows]


def knob_table(url: str, queries: list[Query], model: str) -> tuple[list[dict[str, Any]], list[float]]:
    out, baseline, base_times = [], [], []
    with connect(url, autocommit=True) as conn:
        for q in queries[:5]:
            call(conn, q, model, {})  # warm the cache
        for label, knobs in KNOBS:
            times, kept = [], []
            for i, q in enumerate(queries):
                t0 = time.perf_counter()
                ids = call(conn, q, model, knobs)
                times.append((time.perf_counter() - t0) * 1000)
                if not knobs:
                    baseline.append(ids)
                elif baseline[i]:
                    kept.append(len(set(ids) & set(baseline[i])) / len(baseline[i]))
            base_times = base_times or times
            p50, p95, p99 = np.percentile(times, [50, 95, 99])
            out.append(
                {
                    "setting": label,
                    **knobs,
                    "p50_ms": round(p50, 1),
                    "p95_ms": round(p95, 1),
                    "p99_ms": round(p99, 1),
                    "top15_kept": round(float(np.mean(kept)), 3) if kept else 1.0,
                }
            )
            log(f"  {label}: p50 {p50:.1f} p95 {p95:.1f} p99 {p99:.1f} ms")
    return out, base_times


def variant_table(url: str, dims: int, queries: list[Query], model: str) -> list[dict[str, Any]]:
    out = []
    with connect(url, autocommit=True) as conn:
        conn.prepare_threshold = None  # our own PREPARE/DEALLOCATE must not meet psycopg's
        shipped = conn.execute("select public.hybrid_search_query(%s)", (dims,)).fetchone()[0]
        single = PER_TERM_SCORE.sub("ts_rank(c.fts, $2)", shipped)
        conn.execute("set hnsw.iterative_scan = relaxed_order")
        conn.execute("set hnsw.ef_search = 100")
        for q in queries:
            terms, idfs, match, avg_length, _detail = conn.execute(
                TERMS_SQL, {"query_text": q.terms}
            ).fetchone()
            params = (
                vector_literal(q.vector),
                match,
                60,
                "{}",
                1.0,
                1.0,
                match is not None,
                True,
                model,
                60.0,
                15,
                terms,
                idfs,
                0.5,
                avg_length,
            )
            row: dict[str, Any] = {"query": q.text}
            for label, text, seqscan in (
                ("shipped", shipped, "on"),
                ("one ts_rank per row", single, "on"),
                ("shipped, enable_seqscan off", shipped, "off"),
            ):
                if text is single and single == shipped:
                    continue  # the statement changed shape; this variant no longer applies
                conn.execute("select set_config('enable_seqscan', %s, false)", (seqscan,))
                conn.execute(sql.SQL("prepare hs ({}) as {}").format(sql.SQL(PARAM_TYPES), sql.SQL(text)))
                cur = psycopg.ClientCursor(conn)
                runs = [
                    cur.execute("explain (analyze, format json) " + EXECUTE, params).fetchone()[0][0]
                    for _ in range(3)
                ]
                row[label] = round(float(np.median([r["Execution Time"] for r in runs])), 1)
                conn.execute("deallocate hs")
            conn.execute("reset enable_seqscan")
            out.append(row)
            log(f"  {json.dumps(row, ensure_ascii=False)}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--dims", type=int, choices=sorted(MODELS), default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--slowest", type=int, default=5, help="questions for the statement variants")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    url = with_database(start_embedded_server(BENCH_SERVER_DIR), database_name(args.size, args.dims))
    model = MODELS[args.dims]
    queries = load_queries(SentencePool.load(), args.dims, args.seed, args.queries)
    knobs, times = knob_table(url, queries, model)
    slowest = [queries[i] for i in np.argsort(times)[::-1][: args.slowest]]
    variants = variant_table(url, args.dims, slowest, model)
    report = {
        "size": args.size,
        "dims": args.dims,
        "queries": len(queries),
        "knobs": knobs,
        "variants": variants,
    }
    name = f"latency-knobs-{args.size}" + ("" if args.dims == 384 else f"-{args.dims}d")
    write_json(RESULTS_DIR / f"{name}.json", report)
    cols = list(dict.fromkeys(k for v in variants for k in v if k != "query"))
    md = "\n".join(
        [
            f"# hybrid_search knobs and statement variants at {args.size:,} chunks",
            "",
            f"{len(queries)} questions, concurrency 1, client-side ms; top15_kept: share of the shipped "
            "settings' 15 results the setting also returns.",
            "",
            markdown_table(
                ["setting", "p50 ms", "p95 ms", "p99 ms", "top15 kept"],
                [(k["setting"], k["p50_ms"], k["p95_ms"], k["p99_ms"], k["top15_kept"]) for k in knobs],
            ),
            "",
            f"EXPLAIN ANALYZE execution ms (median of 3) for the {len(slowest)} slowest questions:",
            "",
            markdown_table(
                ["question", *cols], [(v["query"], *(v.get(c, "") for c in cols)) for v in variants]
            ),
            "",
        ]
    )
    (RESULTS_DIR / f"{name}.md").write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
