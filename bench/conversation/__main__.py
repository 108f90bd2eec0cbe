"""python -m bench.conversation: the conversation benchmark (see bench/conversation/__init__.py)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from backend import PROJECT_ROOT
from backend.cli.ingest_commands import iter_inputs
from backend.composition import Services, build_services
from backend.config import Settings
from backend.embeddings import LocalEmbedder
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_path
from backend.llm.extractive import ExtractiveLLM
from bench.common import CACHE_DIR, DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached
from bench.conversation.pairs import Pair, build_pairs
from bench.conversation.report import pair_summary, render
from bench.conversation.run import misread_questions, run_demo, run_pairs, run_small_talk
from bench.routing.split import MissingDataset, load_split, write_half_corpus

WORK_DIR = CACHE_DIR / "conversation"
DEMO_CORPUS = PROJECT_ROOT / "demo" / "corpus"
DEFAULT_SETS = ("cmrc2018-dev", "drcd-dev", "xquad-en-dev")  # xquad-zh's titles are English: no pairs
# Every development set's questions go through the turn classifier: none may be taken for small talk.
CLASSIFIER_SETS = ("cmrc2018-dev", "drcd-dev", "xquad-en-dev", "xquad-zh-dev", "dureader-checklist-dev")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.conversation", description=__doc__)
    parser.add_argument(
        "--sets",
        nargs="*",
        default=list(DEFAULT_SETS),
        help="sets to build follow-up pairs from (none: skip)",
    )
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--pairs", type=int, default=0, help="follow-up pairs per set (sha256 order; 0: all)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "conversation.json")
    return parser.parse_args(argv)


def cached_services(
    settings: Settings, inner: LocalEmbedder, url: str, cache_name: str, seeds: Iterable[str]
) -> tuple[Services, BenchCache]:
    """Services on a scratch database whose embedder keeps its vectors in cache_name, seeded from the
    routing benchmark's caches of the same texts."""
    cache = BenchCache(inner.model_id, cache_name)
    for seed in seeds:
        known = BenchCache(inner.model_id, seed)
        for mine, theirs in ((cache.passages, known.passages), (cache.queries, known.queries)):
            for key, vector in theirs.items():
                mine.setdefault(key, vector)
    embedder = CachedEmbedder(inner, cache)
    services = build_services(
        settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False
    )
    return services, cache


def ingest(services: Services, items: Iterable[LoadedDocument | LoadFailure], label: str) -> None:
    summary = ingest_cached(services, items, label)
    log(f"{label}: {summary.counts} in {summary.seconds:.0f} s")


def pick(pairs: list[Pair], n: int) -> list[Pair]:
    ordered = sorted(pairs, key=lambda p: hashlib.sha256(p.turn2.qid.encode()).hexdigest())
    return ordered[:n] if n > 0 else ordered


def run_set(
    name: str, settings: Settings, inner: LocalEmbedder, args: argparse.Namespace
) -> list[dict[str, Any]]:
    split = load_split(name, args.datasets_dir)
    pairs = pick(build_pairs(split), args.pairs)
    log(f"{name}: {len(pairs)} follow-up pairs")
    if not pairs:
        return []
    half = write_half_corpus(split, WORK_DIR / name)
    with scratch_database(f"conversation-{name}") as url:
        services, cache = cached_services(settings, inner, url, f"conversation.{name}", [name])
        try:
            ingest(services, load_path(half.corpus_path), name)
            results = asyncio.run(run_pairs(services, pairs))
            cache.save()
        finally:
            services.close()
    return results


def run_demo_corpus(
    settings: Settings, inner: LocalEmbedder
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with scratch_database("conversation-demo") as url:
        services, cache = cached_services(settings, inner, url, "conversation.demo", [])
        try:
            ingest(services, iter_inputs([DEMO_CORPUS]), "demo")
            talk = asyncio.run(run_small_talk(services))
            demo = asyncio.run(run_demo(services))
            cache.save()
        finally:
            services.close()
    return talk, demo


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = bench_settings()
    inner = LocalEmbedder(settings)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("bench.conversation"),
        "code": code_version(),
        "machine": machine(),
        "embedder": inner.model_id,
        "pairs_per_set": args.pairs,
    }
    try:
        pairs: list[dict[str, Any]] = []
        for name in args.sets:
            pairs += run_set(name, settings, inner, args)
    except MissingDataset as exc:
        log(f"error: {exc}")
        return 2
    report["pairs_by_set"] = {
        name: pair_summary([p for p in pairs if p["set"] == name])
        for name in args.sets
        if any(p["set"] == name for p in pairs)
    }
    report["pairs_total"] = pair_summary(pairs)
    report["small_talk"], report["demo"] = run_demo_corpus(settings, inner)
    present = [n for n in CLASSIFIER_SETS if (args.datasets_dir / n).is_dir()]
    report["classifier"] = misread_questions(present, args.datasets_dir)
    report["pairs"] = pairs
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out} in {report['total_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
