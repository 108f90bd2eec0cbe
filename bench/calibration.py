"""Labelled queries for confidence calibration, derived from the development sets.

Usage: .venv/bin/python -m bench.calibration [--dataset NAME ...] [--embedder local|hashing]
                                             [--per-class N] [--out bench/results/calibration-labels.jsonl]
then:  .venv/bin/python -m backend calibrate bench/results/calibration-labels.jsonl

Each corpus is searched the way /chat searches it (actual_recall candidates, local_recall_k kept):
  good       a query of this corpus whose gold document is ranked first;
  ambiguous  a query of this corpus with its gold document's title taken out ("尤金袋鼠分布在哪些地区？"
             -> "分布在哪些地区？"): it no longer says which document it is about;
  bad        a query of this corpus whose gold document is not in the top 5, or a query of ANOTHER
             corpus on a different topic (same script), which this corpus cannot answer.
(Queries whose gold document is ranked 2nd to 5th are left out: answerable, but not cleanly either.)
Each row carries the confidence's best_overall_score and score_ratio, what `calibrate` reads.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.chat.options import EvidenceOptions
from backend.config import Settings
from backend.ingest.loaders import load_path
from backend.search.types import SearchRequest
from backend.text import query_terms
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import first_occurrences, load_dataset, read_jsonl
from bench.common.db import scratch_database, services
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached, make_embedder

# Unanswerable queries for each corpus: another set's questions on other topics, in the same script.
FOREIGN = {"cmrc2018-dev": "xquad-zh-dev", "xquad-zh-dev": "cmrc2018-dev", "drcd-dev": "cmrc2018-dev"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", help="corpus to label (repeatable)")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--per-class", type=int, default=150, help="in-corpus and foreign queries per set")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "calibration-labels.jsonl")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    args.dataset = args.dataset or ["cmrc2018-dev", "xquad-zh-dev", "xquad-en-dev"]
    return args


def label_for(rank: int | None, kind: str) -> str | None:
    if kind == "stripped":
        return "ambiguous"
    if kind == "foreign" or rank is None or rank > 5:
        return "bad"
    return "good" if rank == 1 else None


def strip_title(text: str, title: str) -> str | None:
    """The query without its document's title, if it named it and something significant remains."""
    if len(title) < 2 or title.lower() not in text.lower():
        return None
    stripped = re.sub(re.escape(title), "", text, flags=re.IGNORECASE).strip(" ,，")
    return stripped if query_terms(stripped) else None


def label_dataset(name: str, settings: Settings, args: argparse.Namespace) -> list[dict[str, Any]]:
    rng = random.Random(args.seed)
    dataset = load_dataset(name, DATASETS_DIR)
    own = rng.sample(dataset.queries, min(args.per_class, len(dataset.queries)))
    foreign: list[tuple[str, str]] = []
    if name in FOREIGN:
        other = load_dataset(FOREIGN[name], DATASETS_DIR)
        foreign = rng.sample(other.queries, min(args.per_class, len(other.queries)))
    doc_titles = {str(row["_id"]): row.get("title") or "" for row in read_jsonl(dataset.corpus_path)}
    stripped = []
    for qid, text in dataset.queries:
        gold_title = doc_titles.get(next(iter(dataset.qrels[qid])), "")
        bare = strip_title(text, gold_title)
        if bare:
            stripped.append((qid, bare))
    stripped = rng.sample(stripped, min(args.per_class, len(stripped)))
    inner = make_embedder(args.embedder, settings)
    embedder = CachedEmbedder(inner, BenchCache(inner.model_id, name))
    budget = EvidenceOptions().budget(settings)
    rows = []
    with scratch_database(f"calibration-{name}") as url, services(url, settings, embedder) as app:
        ingest_cached(app, load_path(dataset.corpus_path), name)
        runs = (
            [(q, "own") for q in own]
            + [(q, "foreign") for q in foreign]
            + [(q, "stripped") for q in stripped]
        )
        for (qid, text), kind in runs:
            result = app.retrieval.search(
                SearchRequest(
                    text, top_k=budget.local_recall_k, prefetch_k=budget.actual_recall, dynamic=False
                ),
                identity=LOCAL_IDENTITY,
            )
            docs = first_occurrences(c.external_id for c in result.results)
            gold = set() if kind == "foreign" else set(dataset.qrels[qid])
            rank = next((i for i, d in enumerate(docs, 1) if d in gold), None)
            label = label_for(rank, kind)
            if label is None:
                continue
            confidence = result.confidence
            rows.append(
                {
                    "query": text,
                    "label": label,
                    "best_overall_score": confidence["best_overall_score"],
                    "score_ratio": confidence["score_ratio"],
                    "dataset": name,
                    "kind": kind,
                    "gold_rank": rank,
                    "confidence_level": confidence["confidence_level"],
                    # Raw features of the candidate parents: calibrate derives normalisation anchors.
                    "parents": [p["features"] for p in confidence["top_parents"]],
                }
            )
        embedder.cache.save()
    counts = {k: sum(r["label"] == k for r in rows) for k in ("good", "ambiguous", "bad")}
    log(f"{name}: {counts}")
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = bench_settings()
    rows = [row for name in args.dataset for row in label_dataset(name, settings, args)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} labelled queries to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
