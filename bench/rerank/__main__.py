"""The rerank study (issue 12): learned policies validated leave-one-dataset-out, the calibrated
dynamic cut, and per-document diversity, against the seed's formula and bench.quality's baselines.

Usage: .venv/bin/python -m bench.rerank [--dataset NAME ... | --all] [--recollect]
                                        [--features F ...] [--l2 X] [--max-gold-loss X]
                                        [--fit-version vN] [--out bench/results/rerank.json]

The first run per dataset collects every question's prefetched candidates through the product's
pipeline (scratch database, cached local vectors; minutes), later runs read them from
.data/bench-cache/rerank. `--fit-version v3` writes backend/retrieval/policies/rerank_v3.json fitted
on all the sets given (never overwriting a shipped file). Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from backend.config import Settings
from backend.embeddings import LocalEmbedder
from backend.retrieval.rerank_policy import RERANK_POLICIES_DIR, load_rerank_policy, save_rerank_policy
from bench.common import DATASETS_DIR, RESULTS_DIR, log
from bench.common.beir import dataset_names
from bench.common.report import command_line, write_json
from bench.rerank.collect import load_or_collect
from bench.rerank.report import DEFAULT_FEATURES, learned_policy, render, study

DROP_RATIO_GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", action="extend", nargs="+", help="folders under --datasets-dir")
    which.add_argument("--all", action="store_true", help="every dataset (the default)")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--recollect", action="store_true", help="run the pipeline again for candidates")
    parser.add_argument(
        "--prefetch-k",
        type=int,
        default=Settings.model_fields["rag_prefetch_k"].default,
        help="candidates per question",
    )
    parser.add_argument("--features", nargs="+", default=list(DEFAULT_FEATURES))
    parser.add_argument("--l2", type=float, default=1e-3, help="L2 penalty on standardised weights")
    parser.add_argument(
        "--max-gold-loss",
        type=float,
        default=0.01,
        help="the cut may lose at most this share of questions whose gold document the top 5 had",
    )
    parser.add_argument("--policy", default="v2", help="the shipped policy to report next to the fits")
    parser.add_argument("--fit-version", help="write the policy fitted on all sets as this version")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "rerank.json")
    args = parser.parse_args(argv)
    if not args.dataset:
        args.dataset = dataset_names(args.datasets_dir)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # Collection runs the seed policy: candidates and their raw scores do not depend on the policy.
    settings = Settings(
        _env_file=None,
        embedding_provider="local",
        llm_provider="extractive",
        rag_rerank_policy="v1",
        rag_prefetch_k=args.prefetch_k,
    )
    inner = LocalEmbedder(settings)
    sets = [load_or_collect(name, inner, settings, args) for name in args.dataset]
    shipped = load_rerank_policy(args.policy)
    result = study(sets, args.features, args.l2, args.max_gold_loss, DROP_RATIO_GRID, shipped)
    result["command"] = command_line("bench.rerank")
    result["prefetch_k"] = args.prefetch_k
    if args.fit_version:
        policy = learned_policy(args.fit_version, result, inner.model_id)
        log(f"wrote {save_rerank_policy(policy, RERANK_POLICIES_DIR)}")
    write_json(args.out, result)
    print(render(result))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
