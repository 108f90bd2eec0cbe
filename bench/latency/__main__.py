"""Latency and throughput of retrieval at scale: hybrid_search, match_documents and POST /search.

Usage: .venv/bin/python -m bench.latency --sizes 10000 100000 [--dims 384] [--seconds-per-cell N]
                                         [--keep-db | --reuse] [--term-stats trigger|refresh]
                                         [--selectivity 0.0001 0.001 0.01 0.1 0.5 [--sweep-only]]

Per size: a synthetic corpus (bench/common/synthetic.py) binary-COPYed into a scratch database on
the embedded server in .data/bench-postgres (load.py), the Supabase guide's hybrid_search loaded
beside it; then closed-loop cells at each concurrency, with and without a 1% metadata filter
(cells.py); EXPLAIN (ANALYZE, BUFFERS) of hybrid_search's statement for representative queries and
recall@10 of the vector leg (plans.py); with --selectivity, the selectivity sweep of sweep.py (scopes
of every size and tenants through row-level security, recall@10 against the exact plan). Markdown to
stdout and bench/results/latency-<size>.md,
JSON alongside, plans in bench/results/latency-plans/.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from backend.db.connection import connect
from backend.db.repositories.prewarm import prewarm_hnsw
from backend.db.tuning import detect_machine, sized_settings
from backend.embeddings import LocalEmbedder
from backend.retrieval.params import HYBRID, MATCH
from bench.common import RESULTS_DIR, log, supabase_ref
from bench.common.db import tune_bench_server
from bench.common.report import run_record, write_json
from bench.common.server import serve
from bench.common.synthetic import (
    MIX_RATIO,
    N_CLUSTERS,
    NOISE,
    SPREAD,
    SUBSPACE_RANK,
    Query,
    SentencePool,
    SyntheticCorpus,
    describe,
    load_queries,
    query_vectors,
)
from bench.latency import load as bulk_load
from bench.latency.cells import (
    CellResult,
    RunnerFactory,
    http_runner,
    run_cell,
    search_stages,
    sql_runner,
    supabase_runner,
)
from bench.latency.plans import explain_hybrid, recall_at_10
from bench.latency.report import render
from bench.latency.rls import paired_rls
from bench.latency.server import latency_settings, save_vectors
from bench.latency.sweep import run_sweep

MODELS = {384: LocalEmbedder.model_id, 768: "gemini-embedding-001@768"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--dims", type=int, choices=sorted(MODELS), default=384)
    parser.add_argument("--seconds-per-cell", type=float, default=12.0)
    parser.add_argument("--max-queries-per-cell", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--queries", type=int, default=400, help="real questions cycled through the cells")
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--term-stats", choices=("trigger", "refresh"), default="trigger")
    parser.add_argument("--batch-chunks", type=int, default=20_000, help="chunks per COPY statement")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the HNSW builds")
    parser.add_argument(
        "--shared-buffers",
        default=None,
        help="the benchmark server's shared_buffers (restarts it when different); default: the "
        "product's sizing for this machine (backend/db/tuning.py: a quarter of its memory)",
    )
    parser.add_argument(
        "--warmup-queries",
        type=int,
        default=None,
        help="queries run (unrecorded) before the cells; default: all",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--selectivity",
        type=float,
        nargs="+",
        default=[],
        help="run the selectivity sweep over these shares (of SELECTIVITIES) plus the tenant cells",
    )
    parser.add_argument("--sweep-only", action="store_true", help="with --selectivity: only the sweep")
    parser.add_argument("--sweep-recall-queries", type=int, default=50, help="per sweep cell")
    parser.add_argument(
        "--skip-guide",
        action="store_true",
        help="load no copy of the corpus for the Supabase guide's functions (a 1M copy takes ~15 min)",
    )
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="the API server's port (default: a free one)")
    keep = parser.add_mutually_exclusive_group()
    keep.add_argument("--keep-db", action="store_true", help="keep the scratch database afterwards")
    keep.add_argument(
        "--reuse",
        action="store_true",
        help="reuse a database already loaded with the same size/dims/seed (and keep it)",
    )
    parser.add_argument(
        "--upgrade-in-place",
        action="store_true",
        help="with --reuse: apply newer migrations to the kept database instead of reloading it (for "
        "migrations that change functions, not storage)",
    )
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args(argv)


def time_query_embedding(queries: list[Query], n: int = 20) -> dict[str, Any]:
    """The bundled model's embed_query, one query at a time, after loading it."""
    embedder = LocalEmbedder(latency_settings())
    started = time.perf_counter()
    embedder.embed_query("warm up")
    load_seconds = time.perf_counter() - started
    times = []
    for q in queries[:n]:
        t0 = time.perf_counter()
        embedder.embed_query(q.clean)
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "model": embedder.model_id,
        "load_seconds": round(load_seconds, 2),
        "queries": len(times),
        "p50_ms": round(float(np.percentile(times, 50)), 1),
        "p95_ms": round(float(np.percentile(times, 95)), 1),
        "mean_ms": round(float(np.mean(times)), 1),
    }


def load_or_reuse(corpus: SyntheticCorpus, model: str, args: argparse.Namespace) -> tuple[str, dict, bool]:
    expect = bulk_load.fingerprint(corpus, model)
    url, record = bulk_load.open_database(
        corpus.size, corpus.dims, reuse=args.reuse, expect=expect, upgrade_in_place=args.upgrade_in_place
    )
    if record:
        return url, record, True
    log(f"loading {corpus.size} chunks ({corpus.dims}-d) ...")
    load = bulk_load.load(
        url,
        corpus,
        model=model,
        term_stats=args.term_stats,
        batch_chunks=args.batch_chunks,
        maintenance_work_mem=args.maintenance_work_mem,
    )
    ref = None
    if not args.skip_guide:
        log("loading the Supabase guide's table ...")
        ref = supabase_ref.install(url, dims=corpus.dims, maintenance_work_mem=args.maintenance_work_mem)
    record = {"fingerprint": expect, "load": load, "supabase_ref_load": ref}
    bulk_load.save_record(corpus.size, corpus.dims, record)
    return url, record, False


def run_cells(
    url: str, model: str, queries: list[Query], args: argparse.Namespace, *, guide: bool = True
) -> list[CellResult]:
    settings = latency_settings()
    bounds = {"seconds": args.seconds_per_cell, "max_queries": args.max_queries_per_cell}
    cells = []

    def run(case: str, factory: RunnerFactory, filtered: bool, concurrency: int, extract: Any = None) -> None:
        cell = run_cell(
            case, factory, queries, filtered=filtered, concurrency=concurrency, extract=extract, **bounds
        )
        s = cell.summary()
        log(
            f"  {case:15s} {s['filter'] or '':12s} c={concurrency:<3d} {s['queries']:5d} q  {s['qps']} QPS  "
            f"p50 {s['p50_ms']}  p95 {s['p95_ms']}  p99 {s['p99_ms']} ms  errors {s['errors']}  "
            f"load {s['loadavg_after'][0]}"
        )
        cells.append(cell)

    warm_up(url, model, queries, len(queries) if args.warmup_queries is None else args.warmup_queries)
    if guide:
        run("supabase_ref", supabase_runner(url, settings.rag_prefetch_k, args.dims), False, 1)
        indexed = supabase_runner(url, settings.rag_prefetch_k, args.dims, "hybrid_search_indexed")
        warm_up_runner(indexed, queries, len(queries) if args.warmup_queries is None else args.warmup_queries)
        run("supabase_ref_indexed", indexed, False, 1)
    else:
        log("  the Supabase guide's table was not loaded with this database (--skip-guide): no guide cells")
    for case in (HYBRID, MATCH):
        for filtered in (False, True):
            for concurrency in args.concurrency:
                run(case, sql_runner(url, settings, model, case, filtered), filtered, concurrency)
    if args.skip_http:
        return cells
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "query-vectors.npz"
        save_vectors(str(vectors), query_vectors(queries))
        server_args = ["bench.latency.server", "--database-url", url, "--vectors", str(vectors)]
        with serve([*server_args, "--model-id", model], port=args.port) as (_proc, base):
            for filtered in (False, True):
                for concurrency in args.concurrency:
                    run("POST /search", http_runner(base, filtered), filtered, concurrency, search_stages)
    return cells


def warm_up(url: str, model: str, queries: list[Query], n: int) -> None:
    """Run n queries through each SQL case, unrecorded, so the first cell does not pay for a cold cache."""
    if n <= 0:
        return
    started = time.perf_counter()
    for case in (HYBRID, MATCH):
        for filtered in (False, True):
            warm_up_runner(sql_runner(url, latency_settings(), model, case, filtered), queries, n)
    log(f"  warm-up: {n} queries x 4 cases in {time.perf_counter() - started:.1f} s")


def warm_up_runner(factory: RunnerFactory, queries: list[Query], n: int) -> None:
    """The guide's indexed rewrite warmed like ours: n unrecorded queries (its HNSW index in cache)."""
    run, close = factory()
    try:
        for q in queries[:n]:
            run(q)
    finally:
        close()


def pick_explain_queries(cells: list[CellResult], queries: list[Query]) -> list[tuple[str, Query, bool]]:
    """The median and the slowest query of hybrid_search at c=1, and the slowest with the filter."""
    out = []
    for filtered in (False, True):
        cell = next(
            (
                c
                for c in cells
                if c.case == HYBRID and c.filtered == filtered and c.concurrency == 1 and c.latencies_ms
            ),
            None,
        )
        if not cell:
            continue
        order = np.argsort(cell.latencies_ms)
        if not filtered:
            out.append(("median query, no filter", queries[cell.query_index[order[len(order) // 2]]], False))
        out.append(
            (
                f"slowest query, {'filter bucket=rare' if filtered else 'no filter'}",
                queries[cell.query_index[order[-1]]],
                filtered,
            )
        )
    return out


def run_size(
    size: int, pool: SentencePool, queries: list[Query], args: argparse.Namespace, embedding: dict
) -> dict[str, Any]:
    run = run_record("bench.latency")  # before the load: a long run can straddle a commit
    model, settings = MODELS[args.dims], latency_settings()
    corpus = SyntheticCorpus(pool, size, args.dims, args.seed)
    url, record, reused = load_or_reuse(corpus, model, args)
    try:
        sweep = []
        if reused:  # after a restart of the server nothing is in shared_buffers: walk the graph once
            with connect(url, autocommit=True) as conn:
                for done in prewarm_hnsw(conn):
                    log(f"  prewarmed {done['index']}: {done['visited']} elements in {done['seconds']:.1f} s")
        if args.selectivity:
            log("  selectivity sweep ...")
            # the sweep runs first: warmed as the cells are
            warm_up(url, model, queries, len(queries) if args.warmup_queries is None else args.warmup_queries)
            sweep = run_sweep(
                url,
                settings,
                model,
                queries,
                size=size,
                selectivities=args.selectivity,
                seconds=args.seconds_per_cell,
                max_queries=args.max_queries_per_cell,
                recall_queries=args.sweep_recall_queries,
                concurrency=args.concurrency,
            )
            # kept at once: the rest of a 1M run takes long, and a failure there must not lose the sweep
            write_json(
                args.out_dir / f"latency-{suffix(size, args.dims)}-sweep.json", {**run, "sweep": sweep}
            )
        guide = bool(record.get("supabase_ref_load"))
        cells = [] if args.sweep_only else run_cells(url, model, queries, args, guide=guide)
        explain: list[dict[str, Any]] = []
        recall: list[dict[str, Any]] = []
        rls: list[dict[str, Any]] = []
        if not args.sweep_only:
            for n, (label, q, filtered) in enumerate(pick_explain_queries(cells, queries), 1):
                log(f"  EXPLAIN {label}: {q.text}")
                plan = explain_hybrid(
                    url,
                    args.dims,
                    q,
                    filtered=filtered,
                    model=model,
                    settings=settings,
                    out_base=args.out_dir / "latency-plans" / f"latency-{suffix(size, args.dims)}-q{n}",
                )
                plan["plan_file"] = f"latency-plans/{plan['plan_file']}"
                explain.append({"label": label, **plan})
            log("  recall@10 ...")
            recall = recall_at_10(url, args.dims, queries[: args.recall_queries], model, settings)
            log("  row-level security, paired owner/user calls ...")
            rls = paired_rls(url, settings, model, queries[: args.recall_queries])
        sizes = bulk_load.sizes(url)
        server = bulk_load.server_settings(url)
    finally:
        if not (args.keep_db or args.reuse):
            bulk_load.drop_database(size, args.dims)
    summaries = [c.summary() for c in cells]
    loads = [x for s in summaries for x in (s["loadavg_before"][0], s["loadavg_after"][0])]
    loads += [r["loadavg_after"][0] for r in sweep]
    report = {
        **run,
        "server": server,
        "size": size,
        "dims": args.dims,
        "model": model,
        "reused": reused,
        "database": bulk_load.database_name(size, args.dims) if (args.keep_db or args.reuse) else None,
        "corpus": {"description": corpus_description(pool, args), "pool": describe(pool)},
        "load": record["load"],
        "supabase_ref_load": record.get("supabase_ref_load"),
        "sizes": sizes,
        "seconds_per_cell": args.seconds_per_cell,
        "max_queries_per_cell": args.max_queries_per_cell,
        "query_count": len(queries),
        "query_langs": ", ".join(f"{k} {v}" for k, v in sorted(Counter(q.lang for q in queries).items())),
        "loadavg": {"min": min(loads), "max": max(loads)},
        "cells": summaries,
        "explain": explain,
        "recall": recall,
        "rls": rls,
        "sweep": sweep,
        "query_embedding": embedding,
    }
    report["cell_query_index"] = [
        {
            "case": c.case,
            "filtered": c.filtered,
            "concurrency": c.concurrency,
            "latencies_ms": [round(x, 2) for x in c.latencies_ms],
            "query_index": c.query_index,
        }
        for c in cells
    ]
    return report


def suffix(size: int, dims: int) -> str:
    return f"{size}" if dims == 384 else f"{size}-{dims}d"


def corpus_description(pool: SentencePool, args: argparse.Namespace) -> str:
    return (
        f"chunks of 200-500 characters recombined from {len(pool.texts):,} sentences of the "
        f"{len(pool.docs):,} shared BEIR documents ({MIX_RATIO:.0%} of each chunk's sentences from other "
        f"documents of its language), content_tokens from the product's index_tokens; documents of 1-16 "
        f"chunks; metadata as ingestion writes it plus bucket=rare on 1% and bucket=uncommon on 4% of "
        f"chunks; clustered unit vectors ({N_CLUSTERS} centroids, a {SUBSPACE_RANK}-dimensional in-cluster "
        f"component of length {SPREAD}, isotropic noise {NOISE}), queries drawn from their source "
        f"document's cluster; seed {args.seed}."
    )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    log(f"load average at start: {os.getloadavg()}")
    tune_bench_server(args.shared_buffers or sized_settings(detect_machine())["shared_buffers"])
    pool = SentencePool.load()
    describe(pool)
    queries = load_queries(pool, args.dims, args.seed, args.queries)
    log("timing the local model's query embedding ...")
    embedding = time_query_embedding(queries)
    log(f"  {embedding}")
    for size in args.sizes:
        report = run_size(size, pool, queries, args, embedding)
        path = args.out_dir / f"latency-{suffix(size, args.dims)}.md"
        write_json(path.with_suffix(".json"), report)
        markdown = render(report)
        path.write_text(markdown, encoding="utf-8")
        print(markdown, flush=True)
        log(f"wrote {path} and .json")


if __name__ == "__main__":
    main()
