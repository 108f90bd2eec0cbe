"""Where the result `score` falls (docs/scores.md): gold vs other results, and the best score of questions
the corpus answers vs questions from another corpus it cannot answer. Guides a min_score threshold.

Usage: .venv/bin/python -m bench.scores [--corpus cmrc2018-dev] [--foreign xquad-zh-dev] [--limit-queries 200]
"""

from __future__ import annotations

import argparse

from backend.auth import LOCAL_IDENTITY
from backend.composition import Services
from backend.ingest.loaders import load_path
from backend.search.types import ScoredChunk, SearchRequest
from bench.common import bench_settings, log
from bench.common.beir import load_dataset
from bench.common.db import scratch_database, services
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached, make_embedder


def best_scores(app: Services, queries: list[tuple[str, str]]) -> list[float]:
    return [max((c.score or 0.0 for c in _search(app, text)), default=0.0) for _qid, text in queries]


def _search(app: Services, text: str) -> list[ScoredChunk]:
    request = SearchRequest(query=text, top_k=10, dynamic=False)
    return app.retrieval.search(request, identity=LOCAL_IDENTITY).results


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    picks = (5, 25, 50, 75, 95)
    return " | ".join(f"{ordered[int(p / 100 * (len(ordered) - 1))]:.3f}" for p in picks) if ordered else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="cmrc2018-dev")
    parser.add_argument("--foreign", default="xquad-zh-dev", help="questions this corpus cannot answer")
    parser.add_argument("--limit-queries", type=int, default=200)
    args = parser.parse_args(argv)
    settings = bench_settings()
    inner = make_embedder("local", settings)
    own = load_dataset(args.corpus, limit_queries=args.limit_queries)
    foreign = load_dataset(args.foreign, limit_queries=args.limit_queries)
    with (
        scratch_database("scores") as url,
        services(url, settings, CachedEmbedder(inner, BenchCache(inner.model_id, args.corpus))) as app,
    ):
        ingest_cached(app, load_path(own.corpus_path), args.corpus)
        gold: list[float] = []
        other: list[float] = []
        for qid, text in own.queries:
            for chunk in _search(app, text):
                if chunk.score is not None:
                    (gold if chunk.external_id in own.qrels[qid] else other).append(chunk.score)
        log(f"{args.corpus}: {len(own.queries)} questions searched")
        answerable = best_scores(app, own.queries)
        unanswerable = best_scores(app, foreign.queries)
    print(f"# Result scores ({inner.model_id}, corpus {args.corpus})\n")
    print("| results | p5 | p25 | p50 | p75 | p95 |\n|---|---:|---:|---:|---:|---:|")
    print(f"| gold document's chunks in the top 10 | {percentiles(gold)} |")
    print(f"| other chunks in the top 10 | {percentiles(other)} |")
    print(f"| best score, questions the corpus answers | {percentiles(answerable)} |")
    print(f"| best score, {args.foreign} questions (not in the corpus) | {percentiles(unanswerable)} |")


if __name__ == "__main__":
    main()
