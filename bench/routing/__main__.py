"""python -m bench.routing: the routing benchmark (see bench/routing/__init__.py)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from backend.composition import build_services
from backend.config import Settings
from backend.embeddings import LocalEmbedder
from backend.ingest.loaders import load_path
from backend.llm.extractive import ExtractiveLLM
from bench.common import CACHE_DIR, DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import dataset_names
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached
from bench.routing.chat import chat_sample
from bench.routing.collect import depth_parameters, search_all
from bench.routing.evaluate import evaluate_set
from bench.routing.records import load_chats, load_records, save_chats, save_records
from bench.routing.report import render
from bench.routing.split import COMBINED, MissingDataset, combine, load_split, write_half_corpus
from bench.routing.split import chat_sample as pick_sample
from bench.routing.terms import chunk_totals

WORK_DIR = CACHE_DIR / "routing"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.routing", description=__doc__)
    parser.add_argument(
        "--sets", nargs="+", help="development sets (default: every folder in --datasets-dir)"
    )
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--sample", type=int, default=100, help="/chat questions per half per set (0: none)")
    parser.add_argument(
        "--policy",
        action="append",
        help="score policy to evaluate (repeatable; default: the shipped default and the seed's v1)",
    )
    parser.add_argument(
        "--combined",
        action="store_true",
        help="also every set's ingested half in ONE corpus, all questions asked of it (generality check)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "routing.json")
    parser.add_argument(
        "--reuse", action="store_true", help="re-score the searches and chats of the last run (no database)"
    )
    args = parser.parse_args(argv)
    args.sets = args.sets or dataset_names(args.datasets_dir)
    if not args.sets:
        parser.error(f"no development set found in {args.datasets_dir}")
    if args.combined:
        args.sets = [*args.sets, COMBINED]
    return args


def run_set(name: str, settings: Settings, inner: LocalEmbedder, args: argparse.Namespace) -> dict[str, Any]:
    """Split, ingest one half, search every question, chat on the sample; the raw records are kept."""
    if name == COMBINED:
        split = combine([load_split(s, args.datasets_dir) for s in args.sets if s != COMBINED])
    else:
        split = load_split(name, args.datasets_dir)
    half = write_half_corpus(split, WORK_DIR / name)
    cache = BenchCache(inner.model_id, name)
    if name == COMBINED:  # the sets' own vectors: the same texts, embedded once
        for other in args.sets:
            if other != COMBINED:
                known = BenchCache(inner.model_id, other)
                cache.passages.update(known.passages)
                cache.queries.update(known.queries)
    embedder = CachedEmbedder(inner, cache)
    log(f"{name}: {len(split.ingested_rows)} paragraphs ingested, {len(split.questions)} questions")
    with scratch_database(f"routing-{name}") as url:
        services = build_services(
            settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False
        )
        try:
            summary = ingest_cached(services, load_path(half.corpus_path), name)
            ingest = {
                "seconds": round(summary.seconds, 3),
                **summary.counts,
                "chunks": sum(o.chunks for o in summary.outcomes),
                "chunks_embedded": summary.chunks_embedded,
            }
            records = search_all(services, name, split.questions)
            cache.save()
            with services.pool.connection() as conn:
                totals = chunk_totals(conn)
            sample = [
                q for side in (split.answerable, split.unanswerable) for q in pick_sample(side, args.sample)
            ]
            chats = chat_sample(services, name, sample)
            cache.save()
            depths = depth_parameters(services)
        finally:
            services.close()
    save_records(WORK_DIR / f"{name}.records.jsonl.gz", records)
    save_chats(
        WORK_DIR / f"{name}.chats.json",
        {"chunk_totals": totals, "chats": chats, "ingest": ingest, "depths": depths},
    )
    return {"ingest": ingest}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = bench_settings()
    policies = args.policy or ["v3", settings.score_policy_version, "v1"]
    inner = LocalEmbedder(settings)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("bench.routing"),
        "code": code_version(),
        "machine": machine(),
        "embedder": inner.model_id,
        "default_policy": settings.score_policy_version,
        "policies": policies,
        "clarify_levels": list(settings.chat_clarify_levels),
        "sets": {},
    }
    try:
        for name in args.sets:
            if not args.reuse:
                run_set(name, settings, inner, args)
            records = load_records(WORK_DIR / f"{name}.records.jsonl.gz")
            stored = load_chats(WORK_DIR / f"{name}.chats.json")
            report["sets"][name] = evaluate_set(records, stored, policies, settings)
            report["total_seconds"] = round(time.perf_counter() - started, 1)
            write_json(args.out, report)
    except MissingDataset as exc:
        log(f"error: {exc}")
        return 2
    except FileNotFoundError as exc:
        log(f"error: {exc} (run once without --reuse)")
        return 2
    print(render(report))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
