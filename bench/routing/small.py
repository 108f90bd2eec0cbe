"""Routing in a small collection: a new user's first few documents, not a corpus of thousands.

Usage: .venv/bin/python -m bench.routing.small --set xquad-zh-dev [--other xquad-en-dev] [--articles 2]
                                                [--trials 3] [--unanswerable 100]

The policies were fitted on corpora of 60-4,000 chunks; their backgrounds (the vector leg's row 20, the
terms' idf) read differently in a collection of ten paragraphs. Each trial ingests --articles articles
of --set's ingested half (bench.routing.split; articles in sha256(title) order, the next ones each
trial) and, with --other, as many other articles of --other's ingested half (another language: the
parallel xquad sets share titles, so the other half's articles are other topics), into a fresh
database, then asks --set's questions: those whose paragraph is in the collection (answerable, split by
the paragraph's language with --other) and --unanswerable questions of the half never ingested (in
sha256(qid) order). Prints the routes (default /search depth, no web), summed over the trials.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

from backend.auth import LOCAL_IDENTITY
from backend.composition import Services, build_services
from backend.confidence.routing import decide_route
from backend.config import Settings
from backend.embeddings import LocalEmbedder
from backend.ingest.loaders import load_path
from backend.llm.extractive import ExtractiveLLM
from backend.search.types import SearchRequest
from bench.common import DATASETS_DIR, bench_settings, log
from bench.common.db import scratch_database
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached
from bench.routing.fit import WORK_DIR
from bench.routing.split import MissingDataset, Question, Split, load_split


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rows(split: Split, titles: set[str]) -> list[dict]:
    return [r for r in split.ingested_rows if (r.get("title") or "") in titles]


def _write(rows: list[dict], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def trial_groups(
    split: Split, other: Split | None, trial: int, articles: int, unanswerable: int
) -> tuple[list[dict], list[dict], dict[str, list[Question]]]:
    """The trial's collection (rows of --set, rows of --other) and its question groups."""
    titles = sorted({r.get("title") or "" for r in split.ingested_rows}, key=_digest)
    step = articles * (2 if other else 1)
    own = _rows(split, set(titles[trial * step : trial * step + articles]))
    others = _rows(other, set(titles[trial * step + articles : (trial + 1) * step])) if other else []
    own_ids = {str(r["_id"]) for r in own}
    other_ids = {str(r["_id"]) for r in others}
    never = sorted((q for q in split.questions if not q.answerable), key=lambda q: _digest(q.qid))
    groups = {"answerable": [q for q in split.questions if q.gold_doc in own_ids]}
    if other:
        groups["answerable, other language"] = [q for q in split.questions if q.gold_doc in other_ids]
    groups["unanswerable"] = never[:unanswerable]
    return own, others, groups


def run_trial(
    settings: Settings,
    inner: LocalEmbedder,
    caches: dict[str, BenchCache],
    collection: list[tuple[list[dict], str]],
    groups: dict[str, list[Question]],
    routes: dict[str, Counter[str]],
    trial: int,
) -> None:
    """Ingest the collection (rows, set name) into a fresh database and route every question."""
    asked = collection[0][1]
    with scratch_database(f"routing_small_{trial}") as url:
        for rows, name in collection:
            path = _write(rows, WORK_DIR / "small" / f"{name}-{trial}")
            services = _services(settings, url, CachedEmbedder(inner, caches[name]))
            try:
                ingest_cached(services, load_path(path), name)
            finally:
                services.close()
        services = _services(settings, url, CachedEmbedder(inner, caches[asked]))
        try:
            for label, questions in groups.items():
                for q in questions:
                    result = services.retrieval.search(SearchRequest(query=q.text), identity=LOCAL_IDENTITY)
                    route = decide_route(result.confidence, web_available=False)
                    routes.setdefault(label, Counter())[route] += 1
        finally:
            services.close()


def _services(settings: Settings, url: str, embedder: CachedEmbedder) -> Services:
    return build_services(settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.small", description=__doc__)
    parser.add_argument("--set", required=True, dest="name")
    parser.add_argument("--other", help="a set in another language whose other articles join the collection")
    parser.add_argument("--articles", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--unanswerable", type=int, default=100)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    if min(args.articles, args.trials, args.unanswerable) < 1:
        parser.error("--articles, --trials and --unanswerable must be at least 1")
    try:
        split = load_split(args.name, args.datasets_dir)
        other = load_split(args.other, args.datasets_dir) if args.other else None
    except MissingDataset as exc:
        parser.error(str(exc))
    settings = bench_settings()
    inner = LocalEmbedder(settings)
    caches = {n: BenchCache(inner.model_id, n) for n in {args.name, args.other} if n}
    routes: dict[str, Counter[str]] = {}
    try:
        for trial in range(args.trials):
            own, others, groups = trial_groups(split, other, trial, args.articles, args.unanswerable)
            collection = [(own, args.name)] + ([(others, args.other)] if others else [])
            run_trial(settings, inner, caches, collection, groups, routes, trial)
            log(f"trial {trial}: {len(own)} + {len(others)} paragraphs")
    finally:
        for cache in caches.values():
            cache.save()
    for label, counts in routes.items():
        total = sum(counts.values())
        print(f"{label}: {total} questions, answered {counts['answer'] / total:.1%}, routes {dict(counts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
