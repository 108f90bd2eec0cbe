"""Retrieval quality on the cluster against one node, on the same data: nDCG@10, rankings, routes.

Usage: .venv/bin/python -m bench.distributed [--dataset NAME ... | --all] [--embedder local|hashing]
                                             [--layout tenants|public] [--tenants 8] [--limit-queries N]
                                             [--out bench/results/distributed_quality.json]

Needs a running cluster (`python -m backend cluster up`). Per dataset, the corpus is ingested through
the product's IngestionService into a scratch database on the benchmarks' embedded server and into a
scratch database on the cluster (migrated, then `db distribute`), the same documents in the same
order with the same vectors (.data/bench-cache). Then every query runs through RetrievalService.search
(hybrid prefetch, rerank, dynamic=False, top 10) on both, and the rankings, nDCG@10 and the answer route
(confidence level, web fallback) are compared query by query.

Layouts:
  tenants  (default) the documents dealt round-robin to --tenants users; searched by the service role,
           i.e. every tenant: each search fans out to every shard and the coordinator merges and fuses.
  public   the corpus as the shared corpus (what bench.quality does), searched as AUTH_MODE=none's user:
           the public tenant's shard and the user's own.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from backend.auth import Identity
from backend.auth.identity import LOCAL_IDENTITY, SERVICE_IDENTITY, user_identity
from backend.composition import Services
from backend.config import Settings, get_settings
from backend.db import migrations
from backend.db.distribute import distribute
from backend.errors import InvalidInput
from backend.ingest.documents import LoadedDocument
from backend.ingest.loaders import load_path
from backend.search.types import SearchRequest
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import Dataset, dataset_names, load_dataset, score_ranking
from bench.common.db import scratch_database, services
from bench.common.report import code_version, run_record, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, make_embedder, seed_database_cache
from bench.distributed.report import render

TOP_K = 10
SHARDS = 32  # Citus's default shard count


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", action="extend", nargs="+", help="folders under --datasets-dir")
    which.add_argument("--all", action="store_true", help="every dataset under --datasets-dir")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--layout", choices=("tenants", "public"), default="tenants")
    parser.add_argument(
        "--tenants", type=int, default=8, help="users the corpus is dealt to (layout tenants)"
    )
    parser.add_argument("--shards", type=int, default=SHARDS, help="shards per table on the cluster")
    parser.add_argument("--limit-queries", type=int, default=None, help="the first N queries of each set")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "distributed_quality.json")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    if not args.dataset:
        args.dataset = dataset_names(args.datasets_dir) if args.all else ["xquad-zh-dev"]
    return args


@contextmanager
def cluster_database(label: str, settings: Settings, shards: int) -> Iterator[str]:
    """A scratch database on the running cluster: migrated, distributed, dropped afterwards."""
    from backend.cluster.nodes import load_cluster

    cluster = load_cluster(settings.cluster_dir)
    if cluster is None or not cluster.running(cluster.coordinator):
        raise SystemExit(
            f"no cluster running in {settings.cluster_dir}: start one with python -m backend cluster up"
        )
    name = f"bench_{label.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    url = cluster.create_database(name)
    try:
        migrations.upgrade(url)
        distribute(url, shard_count=shards, log=lambda _m: None)
        yield url
    finally:
        cluster.drop_database(name)


def owners(documents: list[LoadedDocument], args: argparse.Namespace) -> list[tuple[Identity | None, list]]:
    """Who ingests which documents: the backend role all of them, or --tenants users round-robin."""
    if args.layout == "public":
        return [(None, documents)]
    users = [user_identity(uuid.UUID(int=0xD15_0000 + i)) for i in range(args.tenants)]
    return [(user, documents[i :: args.tenants]) for i, user in enumerate(users)]


def load(app: Services, dataset: Dataset, args: argparse.Namespace) -> dict[str, Any]:
    assert isinstance(app.embedder, CachedEmbedder)
    seed_database_cache(app, app.embedder.cache.passages)
    documents = [d for d in load_path(dataset.corpus_path) if isinstance(d, LoadedDocument)]
    started = time.perf_counter()
    counts: dict[str, int] = {}
    for identity, part in owners(documents, args):
        summary = app.ingestion.ingest(part, identity=identity)
        for key, value in summary.counts.items():
            counts[key] = counts.get(key, 0) + value
    app.embedder.cache.save()
    return {"seconds": round(time.perf_counter() - started, 1), **counts}


def run_queries(app: Services, dataset: Dataset, identity: Identity) -> list[dict[str, Any]]:
    """Per query: the ranked external ids, nDCG@10, the route, the search time."""
    out = []
    for qid, text in dataset.queries:
        started = time.perf_counter()
        try:
            result = app.retrieval.search(SearchRequest(text, top_k=TOP_K, dynamic=False), identity=identity)
        except InvalidInput:
            out.append({"ranked": [], "ndcg": 0.0, "route": None, "ms": 0.0})
            continue
        ms = 1000 * (time.perf_counter() - started)
        ranked = [c.external_id for c in result.results]
        route = (result.confidence.get("confidence_level"), result.confidence.get("web_fallback"))
        out.append(
            {
                "ranked": ranked,
                "scores": [round(c.final_score, 6) for c in result.results],
                "ndcg": score_ranking(ranked, dataset.qrels[qid])["ndcg@10"],
                "route": route,
                "ms": ms,
            }
        )
    return out


def compare(single: list[dict[str, Any]], cluster: list[dict[str, Any]]) -> dict[str, Any]:
    n = max(len(single), 1)

    def mean(runs: list[dict[str, Any]], key: str) -> float:
        return sum(r[key] for r in runs) / n

    def p50(runs: list[dict[str, Any]]) -> float:
        times = sorted(r["ms"] for r in runs)
        return round(times[len(times) // 2], 1) if times else 0.0

    return {
        "queries": len(single),
        "ndcg@10_single": round(mean(single, "ndcg"), 4),
        "ndcg@10_cluster": round(mean(cluster, "ndcg"), 4),
        "ndcg@10_delta": round(mean(cluster, "ndcg") - mean(single, "ndcg"), 4),
        "same_ranking": sum(a["ranked"] == b["ranked"] for a, b in zip(single, cluster, strict=True)),
        "same_ranking_and_scores": sum(
            a["ranked"] == b["ranked"] and a.get("scores") == b.get("scores")
            for a, b in zip(single, cluster, strict=True)
        ),
        "same_route": sum(a["route"] == b["route"] for a, b in zip(single, cluster, strict=True)),
        "search_ms_p50_single": p50(single),
        "search_ms_p50_cluster": p50(cluster),
        "differing_queries": [
            i for i, (a, b) in enumerate(zip(single, cluster, strict=True)) if a["ranked"] != b["ranked"]
        ][:20],
    }


def run_dataset(name: str, args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    dataset = load_dataset(name, args.datasets_dir, args.limit_queries)
    inner = make_embedder(args.embedder, settings)
    embedder = CachedEmbedder(inner, BenchCache(inner.model_id, name))
    identity = SERVICE_IDENTITY if args.layout == "tenants" else LOCAL_IDENTITY
    log(f"{name}: {len(dataset.queries)} queries, layout {args.layout}, embedder {inner.model_id}")
    runs: dict[str, Any] = {}
    with (
        scratch_database(name) as single_url,
        cluster_database(name, get_settings(), args.shards) as cluster_url,
        services(single_url, settings, embedder) as single,
        services(cluster_url, settings, embedder) as cluster,
    ):
        for label, app in (("single", single), ("cluster", cluster)):
            runs[f"load_{label}"] = load(app, dataset, args)
            log(f"  {name}: loaded on {label} in {runs[f'load_{label}']['seconds']} s")
        single_runs = run_queries(single, dataset, identity)
        embedder.cache.save()
        cluster_runs = run_queries(cluster, dataset, identity)
    result = {"code": code_version(), **runs, **compare(single_runs, cluster_runs)}
    log(
        f"  {name}: nDCG@10 {result['ndcg@10_single']:.4f} one node, "
        f"{result['ndcg@10_cluster']:.4f} cluster; "
        f"{result['same_ranking']}/{result['queries']} rankings identical"
    )
    return result


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = bench_settings()
    report: dict[str, Any] = {
        **run_record("bench.distributed"),
        "layout": args.layout,
        "tenants": args.tenants if args.layout == "tenants" else None,
        "shards": args.shards,
        "embedder": args.embedder,
        "datasets": {},
    }
    for name in args.dataset:
        report["datasets"][name] = run_dataset(name, args, settings)
        write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
