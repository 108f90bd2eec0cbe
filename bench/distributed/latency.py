"""Latency on the cluster against one node, same corpus: router vs fan-out, and what the fan-out costs.

Usage: .venv/bin/python -m bench.distributed.latency --size 100000 [--shards 32] [--rounds 2]
                                                      [--queries 200] [--concurrency 8] [--reuse]
                                                      [--warmup-queries N]

Needs a running cluster (`python -m backend cluster up`). The latency benchmark's synthetic corpus
(bench/common/synthetic.py: a public corpus of 1 %, three bench tenants of 0.1 / 1 / 10 % and 16 more
owners) is loaded into one node (bench/latency/load.py, the benchmarks' embedded server; reused from
bench.latency when it is there) and into the cluster (bench/distributed/load.py). Then:

  paired      hybrid_search as the backend role (every tenant: on the cluster a fan-out over every
              shard) and as the 10 % tenant through RLS (public + own: two shards), each query run on
              one node and on the cluster back to back, in alternating order, so both see the same
              machine load: p50 / p95 per side.
  statement   hybrid_search's own statement (hybrid_search_query, PREPAREd, as the tables' owner) on
              the cluster for one tenant (a router query), two tenants and every tenant: the
              search itself without the statistics reads, i.e. what routing and the coordinator's
              merge and fusion cost; plus EXPLAIN ANALYZE of the router and the fan-out plan.
  throughput  closed-loop cells at --concurrency on each side (the backend role), QPS and p50 / p95.

Markdown to stdout and bench/results/distributed-latency-<size>.md, JSON beside it, plans in
bench/results/distributed-plans/.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from backend.config import get_settings
from backend.retrieval.params import HYBRID, HybridParams
from bench.common import DATASETS_DIR, RESULTS_DIR, log
from bench.common.db import tune_bench_server
from bench.common.report import run_record, write_json
from bench.common.synthetic import Query, SentencePool, SyntheticCorpus, load_queries, tenant_id
from bench.distributed import load as cluster_load
from bench.latency import load as single_load
from bench.latency.cells import run_cell, sql_runner
from bench.latency.plans import COMPILED_SQL, TERMS_SQL, vector_literal
from bench.latency.server import latency_settings
from bench.latency.sweep import tenant_identity

MODEL = "multilingual-e5-small@384"
DIMS = 384
TENANT = "tenant-10%"
PUBLIC_TENANT = "00000000-0000-0000-0000-000000000000"
# hybrid_search_query's parameters on Citus: the single node's 26, then $27 tenants, $28 visible matches,
# $29 the collections a search is narrowed to (the single node's $27).
PARAM_TYPES = (
    "vector, tsquery, int, jsonb, float8, float8, bool, bool, text, float8, int, "
    "tsquery[], float8[], float8, float8, bigint[], jsonpath, jsonb, bool, jsonb, "
    "timestamptz, timestamptz, timestamptz, timestamptz, bigint[], float8[], uuid[], bigint[], uuid[]"
)
EXECUTE = "execute hs(" + ", ".join(["%s"] * 29) + ")"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--queries", type=int, default=200, help="real questions, cycled")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the queries in the paired runs")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8])
    parser.add_argument("--seconds-per-cell", type=float, default=15.0)
    parser.add_argument(
        "--warmup-queries", type=int, default=None, help="unrecorded per side and search (default: all)"
    )
    parser.add_argument("--batch-chunks", type=int, default=20_000)
    parser.add_argument("--maintenance-work-mem", default="1GB")
    parser.add_argument(
        "--shared-buffers", default="2GB", help="the single node's (the cluster's: cluster up)"
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--reuse", action="store_true", help="reuse databases loaded with the same corpus")
    parser.add_argument(
        "--load-only", action="store_true", help="load (or find) both databases, measure nothing"
    )
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR, help="the sentences of the corpus")
    return parser.parse_args(argv)


def databases(corpus: SyntheticCorpus, args: argparse.Namespace) -> tuple[str, str, dict[str, Any]]:
    """(single-node url, cluster url, the loads' records), loading what is not there yet."""
    from backend.cluster.nodes import load_cluster

    cluster = load_cluster(get_settings().cluster_dir)
    if cluster is None or not cluster.running(cluster.coordinator):
        raise SystemExit("no cluster running: start one with python -m backend cluster up")
    tune_bench_server(args.shared_buffers)
    expect = single_load.fingerprint(corpus, MODEL)
    single_url, single_record = single_load.open_database(corpus.size, DIMS, reuse=args.reuse, expect=expect)
    if not single_record:
        log(f"one node: loading {corpus.size} chunks ...")
        single_record = {
            "fingerprint": expect,
            "load": single_load.load(
                single_url,
                corpus,
                model=MODEL,
                term_stats="refresh",
                batch_chunks=args.batch_chunks,
                maintenance_work_mem=args.maintenance_work_mem,
            ),
            "supabase_ref_load": None,
        }
        single_load.save_record(corpus.size, DIMS, single_record)
    cluster_url, cluster_record = cluster_load.open_database(
        cluster, corpus.size, DIMS, shards=args.shards, reuse=args.reuse, expect=expect
    )
    if not cluster_record:
        log(f"cluster: loading {corpus.size} chunks over {args.shards} shards ...")
        cluster_record = {
            "fingerprint": {**expect, "shards": args.shards},
            "load": cluster_load.load(
                cluster_url,
                corpus,
                model=MODEL,
                batch_chunks=args.batch_chunks,
                maintenance_work_mem=args.maintenance_work_mem,
            ),
        }
        cluster_load.save_record(cluster, corpus.size, DIMS, args.shards, cluster_record)
    return single_url, cluster_url, {"single": single_record["load"], "cluster": cluster_record["load"]}


def percentiles(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(times, 50)), 2),
        "p95_ms": round(float(np.percentile(times, 95)), 2),
    }


def paired(
    single_url: str, cluster_url: str, queries: list[Query], rounds: int, warmup: int
) -> list[dict[str, Any]]:
    """hybrid_search on both sides, each query back to back, in alternating order, after `warmup`
    unrecorded queries on each side (a server just started, or whose cache another load filled,
    would otherwise time its disk: one node's p95 was 449 ms cold and the cluster's 66 at 1M)."""
    settings = latency_settings()
    out = []
    for label, identity in (
        ("backend role: every tenant", None),
        (f"{TENANT} via RLS: public + own", TENANT),
    ):
        who = tenant_identity(identity) if identity else None
        sides = {
            name: sql_runner(url, settings, MODEL, HYBRID, False, identity=who)()
            for name, url in (("single", single_url), ("cluster", cluster_url))
        }
        times: dict[str, list[float]] = {"single": [], "cluster": []}
        same = 0
        try:
            for q in queries[:warmup]:
                for run, _close in sides.values():
                    run(q)
            for i, q in enumerate([q for _ in range(rounds) for q in queries]):
                order = ("single", "cluster") if i % 2 else ("cluster", "single")
                ids = {}
                for name in order:
                    run = sides[name][0]
                    started = time.perf_counter()
                    rows = run(q)
                    times[name].append((time.perf_counter() - started) * 1000)
                    ids[name] = [(r["external_id"], r["position"]) for r in rows]
                same += ids["single"] == ids["cluster"]
        finally:
            for _run, close in sides.values():
                close()
        single, cluster = percentiles(times["single"]), percentiles(times["cluster"])
        row: dict[str, Any] = {"search": label, "queries": len(times["single"]), "same_rows": same}
        row.update({f"single_{k}": v for k, v in single.items()})
        row.update({f"cluster_{k}": v for k, v in cluster.items()})
        row["p50_ratio"] = round(cluster["p50_ms"] / single["p50_ms"], 2)
        out.append(row)
        log(f"  paired {label}: {row}")
    return out


def statement_params(conn: psycopg.Connection, q: Query, knobs: HybridParams, match_count: int) -> list[Any]:
    terms, idfs, match, avg_length, _detail = (
        conn.execute(TERMS_SQL, {"query_text": q.terms}).fetchone() or ()
    )
    leg = knobs.candidate_count or max(match_count * 4, 40)
    compiled = conn.execute(COMPILED_SQL, ("{}",)).fetchone() or ()
    return [
        vector_literal(q.vector),
        match,
        leg,
        "{}",
        knobs.full_text_weight,
        knobs.semantic_weight,
        match is not None,
        knobs.semantic_weight > 0,
        MODEL,
        float(knobs.rrf_k),
        match_count,
        terms,
        idfs,
        0.5,
        avg_length,
        None,
        *compiled,
        None,
        None,
        None,  # $27, set per scope
        None,  # $28: as the owner the full-text leg reads its GIN match directly
        None,  # $29: not narrowed to collections
    ]


def statement(
    cluster_url: str, queries: list[Query], rounds: int, plans_dir: Path, size: int, shards: int
) -> list[dict]:
    """The search statement alone, as the owner, for one tenant, two, and all: router vs fan-out."""
    settings = latency_settings()
    knobs = HybridParams.from_settings(settings)
    tenant = str(tenant_id(TENANT))
    scopes: dict[str, list[str] | None] = {
        f"one tenant ({TENANT}): router": [tenant],
        "two tenants (public + own): fan-out": [PUBLIC_TENANT, tenant],
        "every tenant: fan-out": None,
    }
    out = []
    with psycopg.connect(cluster_url, autocommit=True) as conn:
        conn.prepare_threshold = None
        conn.execute("set search_path = public, extensions")
        # The beam and the iterative scan reach the workers only as SET LOCAL (citus.propagate_set_commands
        # = local): before, the shards walked with ef_search 40 and no iterative scan, and a leg of 120
        # returned ~24 rows. Each execution runs in its own transaction with them, as hybrid_search does.
        beam = [
            "set local hnsw.iterative_scan = relaxed_order",
            f"set local hnsw.ef_search = {max(knobs.ef_search, 120)}",
        ]
        built = conn.execute("select public.hybrid_search_query(%s, false, false)", (DIMS,)).fetchone()
        assert built is not None
        text = built[0]
        conn.execute(sql.SQL("prepare hs ({}) as {}").format(sql.SQL(PARAM_TYPES), sql.SQL(text)))
        cur = psycopg.ClientCursor(conn)
        prepared = [statement_params(conn, q, knobs, settings.rag_prefetch_k) for q in queries]
        for label, tenants in scopes.items():
            times = []
            for _ in range(rounds):
                for params in prepared:
                    params[26] = tenants
                    with conn.transaction():
                        for setting in beam:
                            cur.execute(setting)
                        started = time.perf_counter()
                        cur.execute(EXECUTE, params).fetchall()
                        times.append((time.perf_counter() - started) * 1000)
            params = prepared[len(prepared) // 2]
            params[26] = tenants
            with conn.transaction():
                for setting in beam:
                    cur.execute(setting)
                explain = cur.execute("explain (analyze, verbose off, costs off) " + EXECUTE, params)
                plan = "\n".join(r[0] for r in explain)
            plans_dir.mkdir(parents=True, exist_ok=True)
            name = f"distributed-{size}-s{shards}-{label.split(':')[0].split(' (')[0].replace(' ', '-')}.txt"
            (plans_dir / name).write_text(plan + "\n", encoding="utf-8")
            row = {
                "statement": label,
                "queries": len(times),
                **percentiles(times),
                "plan_file": f"distributed-plans/{name}",
            }
            row.update(plan_facts(plan))
            out.append(row)
            log(f"  statement {label}: {row}")
        conn.execute("deallocate hs")
    return out


def plan_facts(plan: str) -> dict[str, Any]:
    """From Citus's EXPLAIN ANALYZE: router or not, and where a fan-out's time goes: the subplans run
    on the workers (the legs) and those the coordinator runs itself (ranking the merged lists, the
    fusion), the planning, the whole."""
    facts: dict[str, Any] = {"router": "Task Count: 1" in plan and "Distributed Subplan" not in plan}
    subplans = plan.split("Distributed Subplan")[1:]
    facts["subplans"] = len(subplans)
    on_coordinator = on_workers = 0.0
    for part in subplans:
        found = re.search(r"Subplan Duration: ([0-9.]+) ms", part)
        if not found:
            continue
        task_node = re.search(r"Node: host=(\S+) port=(\d+)", part)
        if task_node and task_node.group(1) == "localhost":  # Citus's local execution on the coordinator
            on_coordinator += float(found.group(1))
        else:
            on_workers += float(found.group(1))
    facts["worker_subplans_ms"] = round(on_workers, 2)
    facts["coordinator_subplans_ms"] = round(on_coordinator, 2)
    for line in plan.splitlines():
        line = line.strip()
        if line.startswith("Planning Time:"):
            facts["planning_ms"] = float(line.split()[2])
        elif line.startswith("Execution Time:"):
            facts["execution_ms"] = float(line.split()[2])
    return facts


def throughput(
    single_url: str, cluster_url: str, queries: list[Query], args: argparse.Namespace
) -> list[dict]:
    settings = latency_settings()
    out = []
    for concurrency in args.concurrency:
        for name, url in (("one node", single_url), ("cluster", cluster_url)):
            cell = run_cell(
                f"hybrid_search {name}",
                sql_runner(url, settings, MODEL, HYBRID, False),
                queries,
                filtered=False,
                concurrency=concurrency,
                seconds=args.seconds_per_cell,
                max_queries=5000,
            )
            s = cell.summary()
            out.append(
                {
                    "side": name,
                    **{k: s[k] for k in ("concurrency", "queries", "qps", "p50_ms", "p95_ms", "errors")},
                }
            )
            log(f"  throughput {name} c={concurrency}: {out[-1]}")
    return out


def render(report: dict[str, Any]) -> str:
    size = report["size"]
    lines = [
        f"## Cluster vs one node at {size:,} chunks ({report['shards']} shards, 2 workers on this machine)",
        "",
    ]
    lines += [
        "| search | queries | one node p50 / p95 ms | cluster p50 / p95 ms | cluster / one node (p50) "
        "| same rows |"
    ]
    lines += ["|---|---:|---|---|---:|---:|"]
    for r in report["paired"]:
        lines.append(
            f"| {r['search']} | {r['queries']} | {r['single_p50_ms']} / {r['single_p95_ms']} | "
            f"{r['cluster_p50_ms']} / {r['cluster_p95_ms']} | {r['p50_ratio']} | {r['same_rows']} |"
        )
    lines += [
        "",
        "| the search statement alone (cluster) | p50 / p95 ms | router | subplans | planning ms | plan |",
    ]
    lines += ["|---|---|---|---:|---:|---|"]
    for r in report["statement"]:
        lines.append(
            f"| {r['statement']} | {r['p50_ms']} / {r['p95_ms']} | {r['router']} | {r['subplans']} | "
            f"{r.get('planning_ms', '')} | {r['plan_file']} |"
        )
    if report["throughput"]:
        lines += [
            "",
            "| closed loop, backend role | concurrency | QPS | p50 / p95 ms | errors |",
            "|---|---:|---:|---|---:|",
        ]
        for r in report["throughput"]:
            lines.append(
                f"| {r['side']} | {r['concurrency']} | {r['qps']} | {r['p50_ms']} / {r['p95_ms']} "
                f"| {r['errors']} |"
            )
    lines += ["", "Loads: " + json.dumps(report["loads"], default=str)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    report: dict[str, Any] = {
        **run_record("bench.distributed.latency"),
        "size": args.size,
        "shards": args.shards,
    }
    pool = SentencePool.load(args.datasets_dir)
    corpus = SyntheticCorpus(pool, args.size, DIMS, args.seed)
    single_url, cluster_url, report["loads"] = databases(corpus, args)
    if args.load_only:
        log(f"loaded: {json.dumps(report['loads'], default=str)}")
        return
    queries = load_queries(pool, DIMS, args.seed, args.queries, args.datasets_dir)
    if args.warmup_queries is None:
        args.warmup_queries = len(queries)
    step: Callable[..., Any]
    for key, step, step_args in (
        ("paired", paired, (single_url, cluster_url, queries, args.rounds, args.warmup_queries)),
        (
            "statement",
            statement,
            (cluster_url, queries, args.rounds, args.out_dir / "distributed-plans", args.size, args.shards),
        ),
        ("throughput", throughput, (single_url, cluster_url, queries, args)),
    ):
        log(f"{key} ...")
        report[key] = step(*step_args)
        write_json(args.out_dir / f"distributed-latency-{args.size}-s{args.shards}.json", report)
    text = render(report)
    (args.out_dir / f"distributed-latency-{args.size}-s{args.shards}.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
