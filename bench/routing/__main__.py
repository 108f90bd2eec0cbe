"""python -m bench.routing: the routing benchmark (see bench/routing/__init__.py)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from backend import PROJECT_ROOT
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
from bench.routing.plan import build_variants
from bench.routing.plots import write_plots
from bench.routing.records import load_chats, load_records, save_chats, save_chunk_texts, save_records
from bench.routing.report import render
from bench.routing.split import MissingDataset, write_half_corpus
from bench.routing.split import chat_sample as pick_sample
from bench.routing.summary import describe, render_variants
from bench.routing.terms import chunk_texts, chunk_totals
from bench.routing.variants import KINDS, NotParallel, Variant

WORK_DIR = CACHE_DIR / "routing"
PLOTS_DIR = PROJECT_ROOT / "docs" / "plots"


def database_label(key: str) -> str:
    """A variant key as part of a database name ([a-z0-9_], short enough for PostgreSQL's 63)."""
    return re.sub(r"[^a-z0-9]+", "_", key.lower())[:40]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.routing", description=__doc__)
    parser.add_argument(
        "--sets",
        nargs="+",
        help="development sets (default: every folder in --datasets-dir; sets with their own "
        "answerability labels (answerable.tsv) only run as the native variant)",
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
        help="also every set's ingested half in ONE corpus, all questions asked of it (generality check); "
        "the same as adding the mixed variant",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=KINDS,
        default=["monolingual"],
        help="question variants (issue 26, see bench/routing/variants.py; default: monolingual)",
    )
    parser.add_argument(
        "--questions",
        type=int,
        default=300,
        help="keyword and native variants: questions per side (answerable / unanswerable) per set (0: all)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "routing.json")
    parser.add_argument(
        "--plots",
        type=Path,
        default=PLOTS_DIR,
        help="folder for the score-distribution SVGs (one per variant)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="re-score the searches and chats of the last run (no database)"
    )
    args = parser.parse_args(argv)
    args.sets = args.sets or dataset_names(args.datasets_dir)
    if not args.sets:
        parser.error(f"no development set found in {args.datasets_dir}")
    if args.combined and "mixed" not in args.variants:
        args.variants = [*args.variants, "mixed"]
    return args


def run_variant(variant: Variant, settings: Settings, inner: LocalEmbedder, args: argparse.Namespace) -> None:
    """Ingest the variant's corpus, search every question, chat on the sample; the raw records are kept."""
    split, name = variant.split, variant.key
    started = time.perf_counter()
    half = write_half_corpus(split, WORK_DIR / name)
    cache = BenchCache(inner.model_id, variant.caches[0])
    for other in variant.caches[1:]:  # vectors of the same texts, embedded once (by another variant)
        known = BenchCache(inner.model_id, other)
        for mine, theirs in ((cache.passages, known.passages), (cache.queries, known.queries)):
            for key, vector in theirs.items():
                mine.setdefault(key, vector)
    embedder = CachedEmbedder(inner, cache)
    log(f"{name}: {len(split.ingested_rows)} paragraphs ingested, {len(split.questions)} questions")
    with scratch_database(f"routing_{database_label(name)}") as url:
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
                texts = chunk_texts(conn)
            sample = [
                q for side in (split.answerable, split.unanswerable) for q in pick_sample(side, args.sample)
            ]
            chats = chat_sample(services, name, sample)
            cache.save()
            depths = depth_parameters(services)
        finally:
            services.close()
    save_records(WORK_DIR / f"{name}.records.jsonl.gz", records)
    save_chunk_texts(WORK_DIR / f"{name}.chunks.json.gz", texts)
    save_chats(
        WORK_DIR / f"{name}.chats.json",
        {
            "chunk_totals": totals,
            "chats": chats,
            "ingest": ingest,
            "depths": depths,
            "seconds": round(time.perf_counter() - started, 1),
        },
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = bench_settings()
    policies = list(dict.fromkeys(args.policy or ["v3", settings.score_policy_version, "v1"]))
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
        "variants": args.variants,
        "questions_per_side": args.questions,
        "chat_sample_per_half": args.sample,
        "sets": {},
    }
    try:
        variants = build_variants(args.variants, args.sets, args.datasets_dir, args.questions)
        for variant in variants:
            if not args.reuse:
                run_variant(variant, settings, inner, args)
            records = load_records(WORK_DIR / f"{variant.key}.records.jsonl.gz")
            stored = load_chats(WORK_DIR / f"{variant.key}.chats.json")
            report["sets"][variant.key] = {
                **evaluate_set(records, stored, policies, settings),
                **describe(variant, records, stored),
            }
            report["total_seconds"] = round(time.perf_counter() - started, 1)
            write_json(args.out, report)
    except (MissingDataset, NotParallel) as exc:
        log(f"error: {exc}")
        return 2
    except FileNotFoundError as exc:
        log(f"error: {exc} (run once without --reuse)")
        return 2
    print(render(report))
    for version in dict.fromkeys([settings.score_policy_version, *policies]):
        if version != "v1":  # the seed formula routes every question to answer
            print()
            print(render_variants(report, version))
    for path in write_plots(report, args.plots):
        log(f"wrote {path}")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
