"""Where the exact scan of a filtered scope stops paying: the default of RAG_EXACT_SCAN_THRESHOLD.

    python -m bench.latency.plan_threshold --size 100000 --reuse [--scope metadata|dates]

On the latency benchmark's synthetic corpus (bench/latency's database of that size, loaded if
missing), a scope of about each requested count of chunks:
    metadata (default)  the containment filter nearest the count among the synthetic "sel" shares,
                        alone or with a `lang` or `source` value ({"sel": ["0.01"], "lang": "en"}):
                        served by the GIN index on chunks.metadata, no change to the data;
    dates               documents get dates spread over 1,000 days (an UPDATE of every row, then the
                        HNSW index rebuilt: minutes at 100k, too long at 1M), and a `created_at` range
                        admits any count through the btree on chunks.document_created_at.
For each admitted count, every query runs back to back in alternating order as
    exact    exact_scan_threshold large: the scope is counted, every distance computed
    hnsw     exact_scan_threshold 0: the HNSW walk with an iterative scan, as before migration 016
    planned  exact_scan_threshold = --threshold: what the product does (estimate, count, choose)
through match_documents and hybrid_search. Reported: p50 / p95 of each, exact / hnsw p50 (the ratio
in the same run, so machine noise cancels), and recall@10 of hnsw against exact. The default is the
largest count where exact is still no slower than hnsw.
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

from backend.db.connection import connect
from backend.embeddings import LocalEmbedder
from bench.common import RESULTS_DIR, log
from bench.common.db import scalar, tune_bench_server
from bench.common.report import write_json
from bench.common.synthetic import SELECTIVITIES, SentencePool, SyntheticCorpus, load_queries
from bench.latency import load as bulk_load

EXACT, HNSW = 1_000_000, 0
MODELS = {384: LocalEmbedder.model_id, 768: "gemini-embedding-001@768"}  # as bench/latency's
DATED = "select count(distinct document_created_at) > 100 from public.chunks"
# Dates by a hash of the document id, so a date range is a random sample of the vector space.
SPREAD_DATES = (
    "update public.documents set created_at = timestamptz '2020-01-01 00:00:00+00' "
    "+ (abs(hashtext(id::text)) % 1000) * interval '1 day'"
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dims", type=int, choices=sorted(MODELS), default=384)
    parser.add_argument(
        "--counts", type=int, nargs="+", default=[500, 1000, 2000, 5000, 10_000, 20_000, 40_000]
    )
    parser.add_argument("--queries", type=int, default=30, help="questions per admitted count")
    parser.add_argument("--threshold", type=int, default=10_000, help="the 'planned' variant's threshold")
    parser.add_argument("--reuse", action="store_true", help="reuse bench/latency's database of that size")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--scope", choices=("metadata", "dates"), default="metadata")
    parser.add_argument(
        "--shared-buffers",
        default="4GB",
        help="as bench.latency's default: a different value restarts the server (and breaks a running load)",
    )
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args(argv)


def prepare(size: int, dims: int, pool: SentencePool, args: argparse.Namespace) -> str:
    """bench/latency's database of this size, with its documents' dates spread over 1,000 days."""
    corpus = SyntheticCorpus(pool, size, dims, args.seed)
    model = MODELS[dims]
    url, record = bulk_load.open_database(
        size, dims, reuse=args.reuse, expect=bulk_load.fingerprint(corpus, model)
    )
    if not record:
        log(f"loading {size} chunks ...")
        load = bulk_load.load(
            url, corpus, model=model, term_stats="refresh", batch_chunks=20_000, maintenance_work_mem="1GB"
        )
        bulk_load.save_record(size, dims, {"fingerprint": bulk_load.fingerprint(corpus, model), "load": load})
    if args.scope == "metadata":
        return url
    with connect(url) as conn:
        if not scalar(conn, DATED):
            log("spreading document dates (the HNSW index is rebuilt afterwards) ...")
            index = f"chunks_embedding_{dims}_hnsw_idx"
            indexdef = scalar(conn, "select indexdef from pg_indexes where indexname = %s", (index,))
            conn.execute(f"drop index public.{index}")
            conn.execute(SPREAD_DATES)  # the trigger of migration 016 carries them to the chunks
            conn.execute("set maintenance_work_mem = '1GB'")
            conn.execute(indexdef)
            conn.commit()
    with connect(url, autocommit=True) as conn:
        # Reused or just dated: the date update left a dead copy of each row.
        conn.execute("vacuum (analyze) public.chunks, public.documents")
    return url


def metadata_scopes(conn: psycopg.Connection) -> list[tuple[int, dict]]:
    """(admitted chunks, filter) for every "sel" share alone and with each `lang` / `source` value."""
    out = []
    extras: list[dict] = [{}]
    for key in ("lang", "source"):
        values = conn.execute(
            "select distinct metadata ->> %s from public.chunks where metadata ? %s limit 20", (key, key)
        ).fetchall()
        extras += [{key: v} for (v,) in values if v]
    for share in SELECTIVITIES:
        for extra in extras:
            tree = {"sel": [str(share)], **extra}
            count = scalar(conn, "select count(*) from public.chunks where metadata @> %s", (Jsonb(tree),))
            out.append((int(count), tree))
    return out


def scope_for(conn: psycopg.Connection, count: int, args: argparse.Namespace, scopes: list) -> dict:
    if args.scope == "dates":
        return {"created_at": {"$lt": cutoff(conn, count)}}
    return min(scopes, key=lambda s: abs(np.log(max(s[0], 1) / count)))[1]


def cutoff(conn: psycopg.Connection, count: int) -> str:
    """The date before which about `count` chunks' documents were created."""
    ordered = "select document_created_at from public.chunks order by document_created_at offset %s limit 1"
    return scalar(conn, ordered, (count,)).isoformat()


def call(
    conn: psycopg.Connection, function: str, query: Any, tree: dict, threshold: int
) -> tuple[float, list]:
    if function == "match_documents":
        statement = "select id, scope_count from match_documents(%s, 10, -1, %s, exact_scan_threshold => %s)"
        params: tuple = (query.vector, Jsonb(tree), threshold)
    else:
        statement = (
            "select id, scope_count from hybrid_search(%s, %s, 10, filter => %s, exact_scan_threshold => %s)"
        )
        params = (query.terms, query.vector, Jsonb(tree), threshold)
    started = time.perf_counter()
    rows = conn.execute(statement, params).fetchall()
    return (time.perf_counter() - started) * 1000, rows


def measure(url: str, queries: list, args: argparse.Namespace) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    variants = {"exact": EXACT, "hnsw": HNSW, "planned": args.threshold}
    with connect(url, autocommit=True) as conn:
        for query in queries[:3]:  # warm the caches and the plan paths
            for threshold in variants.values():
                call(conn, "hybrid_search", query, {}, threshold)
        scopes = metadata_scopes(conn) if args.scope == "metadata" else []
        for count in args.counts:
            tree = scope_for(conn, count, args, scopes)
            for function in ("match_documents", "hybrid_search"):
                times: dict[str, list[float]] = {name: [] for name in variants}
                recalls: list[float] = []
                scope = None
                for i, query in enumerate(queries):
                    order = list(variants) if i % 2 == 0 else list(reversed(variants))
                    found: dict[str, list] = {}
                    for name in order:
                        ms, rows = call(conn, function, query, tree, variants[name])
                        times[name].append(ms)
                        found[name] = rows
                    scope = found["exact"][0][1] if found["exact"] else scope
                    if function == "match_documents" and found["exact"]:
                        truth = {r[0] for r in found["exact"]}
                        recalls.append(len(truth & {r[0] for r in found["hnsw"]}) / len(truth))
                record = {
                    "size": args.size,
                    "scope": scope,
                    "filter": tree,
                    "function": function,
                    **{f"{name}_p50_ms": _pct(t, 50) for name, t in times.items()},
                    **{f"{name}_p95_ms": _pct(t, 95) for name, t in times.items()},
                    "exact_over_hnsw_p50": round(
                        float(np.median(times["exact"]) / np.median(times["hnsw"])), 2
                    ),
                    "hnsw_recall_at_10": round(float(np.mean(recalls)), 3) if recalls else None,
                }
                log(str(record))
                records.append(record)
    return records


def _pct(values: list[float], q: int) -> float:
    return round(float(np.percentile(values, q)), 2)


def render(records: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"# Exact scan vs HNSW by admitted chunks, {args.size:,} chunks, {args.dims}-d",
        "",
        f"`python -m bench.latency.plan_threshold --size {args.size}`; {args.queries} queries per row, "
        "the three variants back to back in alternating order; "
        f"planned = exact_scan_threshold {args.threshold:,}; "
        f"load average at the end {tuple(round(x, 2) for x in os.getloadavg())}.",
        "",
        "| function | filter | admitted | exact p50 / p95 | hnsw p50 / p95 | planned p50 / p95 "
        "| exact / hnsw p50 | hnsw recall@10 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        recall = r["hnsw_recall_at_10"] if r["hnsw_recall_at_10"] is not None else ""
        lines.append(
            f"| {r['function']} | `{json.dumps(r['filter'], ensure_ascii=False)}` "
            f"| {r['scope']:,} | {r['exact_p50_ms']} / {r['exact_p95_ms']} | "
            f"{r['hnsw_p50_ms']} / {r['hnsw_p95_ms']} | {r['planned_p50_ms']} / {r['planned_p95_ms']} | "
            f"{r['exact_over_hnsw_p50']}× | {recall} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    tune_bench_server(args.shared_buffers)
    pool = SentencePool.load()
    queries = load_queries(pool, args.dims, args.seed, args.queries)
    url = prepare(args.size, args.dims, pool, args)
    records = measure(url, queries, args)
    path = args.out_dir / f"plan-threshold-{args.size}.md"
    write_json(path.with_suffix(".json"), {"records": records, "threshold": args.threshold})
    markdown = render(records, args)
    path.write_text(markdown, encoding="utf-8")
    print(markdown, flush=True)
    log(f"wrote {path} and .json")


if __name__ == "__main__":
    main()
