"""Retrieval quality on the shared BEIR sets: the product's pipeline against its parts and baselines.

Usage: .venv/bin/python -m bench.quality [--dataset NAME ... | --all] [--embedder local|hashing]
                                         [--limit-queries N] [--out bench/results/quality.json]

Per dataset: a fresh scratch database on the embedded server in .data/bench-postgres, the corpus
ingested through IngestionService, then every query through each variant of variants.py with the
same chunk and query vectors. Metrics are document-level (a chunk stands for its document, first
occurrence kept): Recall@1/5/10, MRR@10, nDCG@10. Vectors persist in .data/bench-cache, so only the
first run with the local model pays for embedding. Markdown goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from backend.composition import Services
from backend.config import Settings
from backend.embeddings import Embedder
from backend.ingest.documents import LoadedDocument
from backend.ingest.loaders import load_path
from backend.text import clean_query, query_terms
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log, supabase_ref
from bench.common.beir import Dataset, dataset_names, load_dataset, mean_scores, score_ranking
from bench.common.db import scratch_database, services
from bench.common.report import code_version, run_record, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached, make_embedder
from bench.quality.report import render
from bench.quality.variants import DESCRIPTIONS, VARIANTS, ChunkIndex, Diagnostics, Runner, build_runners


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", action="extend", nargs="+", help="folders under --datasets-dir")
    which.add_argument("--all", action="store_true", help="every dataset under --datasets-dir")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--limit-queries", type=int, default=None, help="the first N queries of each set")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "quality.json")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--keep-db", action="store_true", help="keep the scratch databases for inspection")
    args = parser.parse_args(argv)
    if not args.dataset:
        args.dataset = dataset_names(args.datasets_dir) if args.all else ["xquad-zh-dev"]
    return args


def ingest_corpus(app: Services, dataset: Dataset) -> dict[str, Any]:
    """The corpus through IngestionService, its embedding cache seeded from (and saved back to) disk."""
    summary = ingest_cached(app, load_path(dataset.corpus_path), dataset.name)
    return {
        "seconds": round(summary.seconds, 3),
        **summary.counts,
        "chunks": sum(o.chunks for o in summary.outcomes),
        "chunks_embedded": summary.chunks_embedded,
        "chunks_from_cache": summary.chunks_from_cache,
    }


def chunk_texts(app: Services, dataset: Dataset) -> dict[int, str]:
    """chunk id -> the exact text its embedding was computed from (title > headings, then content)."""
    by_key = {}
    for item in load_path(dataset.corpus_path):
        if isinstance(item, LoadedDocument):
            prepared = app.ingestion.prepare(item)
            by_key.update({(prepared.external_id, c.chunk.position): c.embed_text for c in prepared.chunks})
    with app.pool.connection() as conn:
        rows = conn.execute(
            "select c.id, d.external_id, c.position from chunks c join documents d on d.id = c.document_id"
        ).fetchall()
    return {r[0]: by_key[(r[1], r[2])] for r in rows}


def embed_queries(embedder: CachedEmbedder, dataset: Dataset) -> tuple[list[np.ndarray], float]:
    """Each query embedded once (as the pipeline will ask for it: clean_query text), or read from cache."""
    started = time.perf_counter()
    vectors = []
    for n, (_qid, text) in enumerate(dataset.queries, 1):
        vectors.append(embedder.embed_query(clean_query(text)))
        if n % 200 == 0:
            log(f"  {dataset.name}: {n}/{len(dataset.queries)} queries embedded ({embedder.misses} new)")
    return vectors, time.perf_counter() - started


def run_variants(runners: dict[str, Runner], dataset: Dataset, vectors: list[np.ndarray]) -> dict[str, Any]:
    """Every query through every variant: mean metrics, time, and per-query nDCG@10."""
    out = {}
    for name in VARIANTS:
        started = time.perf_counter()
        rankings = [
            runners[name](text, vector) for (_qid, text), vector in zip(dataset.queries, vectors, strict=True)
        ]
        seconds = time.perf_counter() - started
        per_query = [
            score_ranking(r, dataset.qrels[qid])
            for r, (qid, _t) in zip(rankings, dataset.queries, strict=True)
        ]
        out[name] = {
            **mean_scores(per_query),
            "seconds": round(seconds, 3),
            "ms_per_query": round(1000 * seconds / max(len(rankings), 1), 2),
            "per_query_ndcg": [q["ndcg@10"] for q in per_query],
        }
        log(f"  {dataset.name}: {name:16s} nDCG@10 {out[name]['ndcg@10']:.3f}  ({seconds:.1f} s)")
    return out


def diagnostics(dataset: Dataset, diag: Diagnostics, variants: dict[str, Any]) -> dict[str, Any]:
    """Facts that locate a loss: candidate recall, full-text coverage, per-query wins and losses."""
    gold = [set(dataset.qrels[qid]) for qid, _ in dataset.queries]
    n = max(len(gold), 1)
    base = variants["pipeline"]["per_query_ndcg"]
    return {
        "pipeline_candidate_recall": sum(
            bool(g & set(c)) for g, c in zip(gold, diag.candidate_docs, strict=True)
        )
        / n,
        "pipeline_candidates_mean": sum(len(c) for c in diag.candidate_docs) / n,
        "fulltext_hit_rate": sum(r > 0 for r in diag.fulltext_rows) / n,
        "supabase_fts_hit_rate": sum(r > 0 for r in diag.supabase_fts_rows) / n,
        "queries_without_terms": sum(c == 0 for c in diag.query_term_counts) / n,
        "pipeline_vs": {
            name: {
                "better": sum(a > b for a, b in zip(base, v["per_query_ndcg"], strict=True)),
                "worse": sum(a < b for a, b in zip(base, v["per_query_ndcg"], strict=True)),
            }
            for name, v in variants.items()
            if name != "pipeline"
        },
    }


def run_dataset(name: str, inner: Embedder, settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    code = code_version()  # per dataset: a long run can straddle a commit
    dataset = load_dataset(name, args.datasets_dir, args.limit_queries)
    embedder = CachedEmbedder(inner, BenchCache(inner.model_id, name))
    cache = embedder.cache
    log(
        f"{name}: {len(dataset.queries)} queries; cache {cache.path} "
        f"({len(cache.passages)} passages, {len(cache.queries)} queries)"
    )
    with scratch_database(name, keep=args.keep_db) as url, services(url, settings, embedder) as app:
        ingest = ingest_corpus(app, dataset)
        log(f"  {name}: ingested in {ingest['seconds']:.1f} s")
        vectors, embed_seconds = embed_queries(embedder, dataset)
        cache.save()
        started = time.perf_counter()
        supabase_ref.install(url, texts=chunk_texts(app, dataset))
        ref_seconds = time.perf_counter() - started
        with app.pool.connection() as conn:
            chunks = ChunkIndex.load(conn)
        diag = Diagnostics()
        with supabase_ref.open_connection(url) as ref_conn:
            variants = run_variants(build_runners(app, ref_conn, chunks, diag), dataset, vectors)
            diag.supabase_fts_rows = [
                supabase_ref.full_text_matches(ref_conn, query_text=text) for _qid, text in dataset.queries
            ]
        diag.query_term_counts = [len(query_terms(text)) for _qid, text in dataset.queries]
    return {
        "code": code,
        "documents": ingest["created"] + ingest["updated"],
        "chunks": len(chunks.ids),
        "queries": len(dataset.queries),
        "ingest": ingest,
        "query_embedding": {
            "seconds": round(embed_seconds, 3),
            "embedded": embedder.misses,
            "from_cache": len(dataset.queries) - embedder.misses,
        },
        "supabase_ref_load_seconds": round(ref_seconds, 3),
        "pipeline_qps": round(len(dataset.queries) / max(variants["pipeline"]["seconds"], 1e-9), 2),
        "variants": variants,
        "diagnostics": diagnostics(dataset, diag, variants),
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = bench_settings()
    inner = make_embedder(args.embedder, settings)
    started = time.perf_counter()
    report: dict[str, Any] = {
        **run_record("bench.quality"),
        "embedder": inner.model_id,
        "settings": {k: v for k, v in settings.model_dump().items() if k.startswith(("rag_", "chunk_"))},
        "variants": DESCRIPTIONS,
        "datasets": {},
    }
    for name in args.dataset:
        report["datasets"][name] = run_dataset(name, inner, settings, args)
        report["total_seconds"] = round(time.perf_counter() - started, 1)
        write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
