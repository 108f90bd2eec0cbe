"""The study's numbers (one JSON-able dict) and their Markdown tables."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from backend.retrieval.rerank_policy import RerankPolicy
from bench.common.report import markdown_table
from bench.rerank.collect import BASELINES, StudyQuestion, StudySet
from bench.rerank.evaluate import (
    calibrate_drop_ratio,
    cut_point,
    fit_weights,
    metrics,
    ndcg,
    scores_of,
)
from bench.rerank.model import ranked

DEFAULT_FEATURES = ("cosine", "idf_coverage", "phrase_coverage")
SEED = RerankPolicy("v1", {"similarity": 0.7, "keyword_coverage": 0.25, "heading": 0.05}, "linear", 0.6)
CURVE = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8)
EXAMPLES = 4


def _mean(values: Sequence[float]) -> float:
    return round(float(np.mean(values)), 4) if len(values) else 0.0


def study(
    sets: Sequence[StudySet],
    features: Sequence[str],
    l2: float,
    max_loss: float,
    grid: Sequence[float],
    shipped: RerankPolicy,
) -> dict[str, Any]:
    names = [s.name for s in sets]
    out: dict[str, Any] = {"features": list(features), "l2": l2, "max_gold_loss": max_loss, "sets": {}}
    folds = {}
    for held in sets:
        rest = [s for s in sets if s is not held]
        weights = fit_weights(rest, features, l2)
        policy = RerankPolicy("v1", weights, "softmax", 0.5)
        ratio = calibrate_drop_ratio([s.questions for s in rest], policy, max_loss, grid)
        policy = RerankPolicy("v1", weights, "softmax", ratio)
        folds[held.name] = {
            "fitted_on": [s.name for s in rest],
            "weights": _rounded(weights),
            "in_sample_ndcg": {s.name: _mean(ndcg(s.questions, weights)) for s in rest},
            "held_out_ndcg": _mean(ndcg(held.questions, weights)),
            "drop_ratio": ratio,
            "held_out_cut": asdict(cut_point(held.questions, policy, ratio)),
        }
        log_fold(held.name, folds[held.name])
    all_weights = fit_weights(sets, features, l2)
    probe = RerankPolicy("v1", all_weights, "softmax", 0.5)
    all_ratio = calibrate_drop_ratio([s.questions for s in sets], probe, max_loss, grid)
    out["all_sets"] = {"weights": _rounded(all_weights), "drop_ratio": all_ratio}
    out["folds"] = folds
    out["shipped"] = {"name": shipped.name, "weights": shipped.weights, "drop_ratio": shipped.drop_ratio}
    for s in sets:
        out["sets"][s.name] = _per_set(s, all_weights, shipped, folds[s.name])
    out["datasets"] = names
    return out


def log_fold(name: str, fold: dict[str, Any]) -> None:
    from bench.common import log

    log(f"  held out {name}: nDCG@10 {fold['held_out_ndcg']:.4f}, drop_ratio {fold['drop_ratio']}")


def _per_set(
    s: StudySet, all_weights: dict[str, float], shipped: RerankPolicy, fold: dict[str, Any]
) -> dict[str, Any]:
    qs = s.questions
    return {
        "questions": len(qs),
        "documents": s.documents,
        "chunks": s.chunks,
        "candidate_recall": _mean([any(c.document in q.gold for c in q.candidates) for q in qs]),
        "baselines": {b: _mean([_baseline(q, b) for q in qs]) for b in BASELINES},
        "seed_ndcg": _mean(ndcg(qs, SEED.weights)),
        "held_out_ndcg": fold["held_out_ndcg"],
        "in_sample_ndcg": _mean(ndcg(qs, all_weights)),
        "shipped": {
            **{k: round(v, 4) for k, v in metrics(qs, shipped.weights).items()},
            "ndcg_without_diversity": _mean(ndcg(qs, shipped.weights, per_doc_cap=0)),
            "seed_without_diversity": _mean(ndcg(qs, SEED.weights, per_doc_cap=0)),
        },
        "cut": {
            "seed": asdict(cut_point(qs, SEED, SEED.drop_ratio)),
            "shipped": asdict(cut_point(qs, shipped, shipped.drop_ratio)),
            "held_out": fold["held_out_cut"],
            "curve": [asdict(cut_point(qs, shipped, r)) for r in CURVE],
        },
        "misses": _misses(qs, shipped),
    }


def _baseline(q: StudyQuestion, variant: str) -> float:
    from bench.common.beir import score_ranking

    return score_ranking(q.baselines[variant], q.gold)["ndcg@10"]


def _misses(qs: Sequence[StudyQuestion], policy: RerankPolicy) -> dict[str, Any]:
    """Where the shipped policy does not put the gold document first, and why (a few examples)."""
    counts = {"not_prefetched": 0, "same_title_first": 0, "other_document_first": 0}
    examples: list[dict[str, Any]] = []
    for q in qs:
        order = ranked(q, scores_of(q, policy.weights))
        docs = list(dict.fromkeys(c.document for c in order))
        if docs and docs[0] in q.gold:
            continue
        if not any(d in q.gold for d in docs):
            counts["not_prefetched"] += 1
            continue
        top = order[0]
        gold = next(c for c in order if c.document in q.gold)
        kind = "same_title_first" if top.title == gold.title else "other_document_first"
        counts[kind] += 1
        if len(examples) < EXAMPLES:
            examples.append(
                {
                    "question": q.text,
                    "gold": f"{gold.document} ({gold.title})",
                    "gold_rank": docs.index(gold.document) + 1,
                    "first": f"{top.document} ({top.title})",
                    "cosine gold/first": f"{gold.similarity or 0:.3f}/{top.similarity or 0:.3f}",
                }
            )
    return {**counts, "examples": examples}


def _rounded(weights: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in weights.items()}


def learned_policy(version: str, result: dict[str, Any], embedding_model: str) -> RerankPolicy:
    """The policy fitted on every set, with its leave-one-dataset-out evidence."""
    fitted = result["all_sets"]
    return RerankPolicy(
        version=version,
        weights=fitted["weights"],
        output="softmax",
        drop_ratio=fitted["drop_ratio"],
        description=(
            "Conditional logit over the candidates' features (python -m bench.rerank); final_score is "
            "a candidate's softmax share, and the cut keeps results at least drop_ratio times as "
            "likely as the best."
        ),
        embedding_model=embedding_model,
        calibration={
            "date": datetime.date.today().isoformat(),
            "command": result.get("command"),
            "datasets": result["datasets"],
            "validation": "leave-one-dataset-out",
            "prefetch_k": result["prefetch_k"],
            "l2": result["l2"],
            "held_out_ndcg@10": {n: f["held_out_ndcg"] for n, f in result["folds"].items()},
            "in_sample_ndcg@10": {n: s["in_sample_ndcg"] for n, s in result["sets"].items()},
            "held_out_drop_ratio": {n: f["drop_ratio"] for n, f in result["folds"].items()},
            "cut_rule": f"largest drop_ratio keeping the gold document for all but "
            f"{result['max_gold_loss']:.0%} of the questions whose top 5 had it, on every set",
        },
    )


def render(result: dict[str, Any]) -> str:
    sets = result["sets"]
    names = list(sets)
    parts = ["# Rerank policies and the dynamic cut (`python -m bench.rerank`)", f"`{result['command']}`"]
    rows = [[f"`{b}` (bench.quality baseline)", *(sets[n]["baselines"][b] for n in names)] for b in BASELINES]
    rows.append(["seed formula (rerank_v1)", *(sets[n]["seed_ndcg"] for n in names)])
    rows.append(["learned, held out (LODO)", *(sets[n]["held_out_ndcg"] for n in names)])
    rows.append(["learned, in sample (all four)", *(sets[n]["in_sample_ndcg"] for n in names)])
    rows.append([f"shipped {result['shipped']['name']}", *(sets[n]["shipped"]["ndcg@10"] for n in names)])
    rows.append(
        [f"gold among the {result['prefetch_k']} candidates", *(sets[n]["candidate_recall"] for n in names)]
    )
    parts += ["## nDCG@10 (document level, dynamic=false)", markdown_table(["ranking", *names], rows)]
    fold_rows = [
        [n, ", ".join(f["fitted_on"]), f["held_out_ndcg"], _fmt(f["weights"]), f["drop_ratio"]]
        for n, f in result["folds"].items()
    ]
    parts += [
        f"## Leave-one-dataset-out folds (features {', '.join(result['features'])}; L2 {result['l2']})",
        markdown_table(["held out", "fitted on", "nDCG@10", "weights", "drop_ratio"], fold_rows, "lllrr"),
        f"Fitted on all sets: {_fmt(result['all_sets']['weights'])}, drop_ratio "
        f"{result['all_sets']['drop_ratio']}.",
    ]
    parts += ["## Default /search (dynamic=true, top_k 5)", _cut_table(sets, names)]
    parts += ["## Trade-off of the shipped policy's drop_ratio", _curve_table(sets, names)]
    div = [
        [
            n,
            sets[n]["shipped"]["ndcg_without_diversity"],
            sets[n]["shipped"]["ndcg@10"],
            sets[n]["shipped"]["seed_without_diversity"],
            sets[n]["seed_ndcg"],
        ]
        for n in names
    ]
    parts += [
        "## Per-document diversity (per_doc_cap 3) and nDCG@10",
        markdown_table(["dataset", "shipped, cap 0", "shipped, cap 3", "seed, cap 0", "seed, cap 3"], div),
    ]
    parts += ["## Where the shipped policy misses (gold not first)", _miss_table(sets, names)]
    return "\n\n".join(parts) + "\n"


def _cut_table(sets: dict[str, Any], names: list[str]) -> str:
    rows = []
    for label, key in (("seed (v1, 0.6 x best score)", "seed"), ("shipped", "shipped"), ("LODO", "held_out")):
        for n in names:
            c = sets[n]["cut"][key]
            rows.append(
                [
                    label,
                    n,
                    c["drop_ratio"],
                    f"{c['mean_results']:.2f}",
                    _pct(c["one_result"]),
                    _pct(c["gold_kept"]),
                ]
            )
    return markdown_table(
        ["policy", "dataset", "drop_ratio", "mean results", "exactly 1 result", "gold in results"],
        rows,
        "llrrrr",
    )


def _curve_table(sets: dict[str, Any], names: list[str]) -> str:
    rows = []
    for i, ratio in enumerate(CURVE):
        cells: list[object] = [ratio]
        for n in names:
            c = sets[n]["cut"]["curve"][i]
            cells.append(f"{c['mean_results']:.2f} / {_pct(c['one_result'])} / {_pct(c['gold_kept'])}")
        rows.append(cells)
    return "mean results / exactly one / gold kept\n\n" + markdown_table(["drop_ratio", *names], rows)


def _miss_table(sets: dict[str, Any], names: list[str]) -> str:
    rows = [
        [
            n,
            sets[n]["misses"]["not_prefetched"],
            sets[n]["misses"]["same_title_first"],
            sets[n]["misses"]["other_document_first"],
        ]
        for n in names
    ]
    table = markdown_table(
        ["dataset", "gold not prefetched", "same article first", "other article first"], rows
    )
    examples = [
        f"* {n}: “{e['question']}” gold {e['gold']} at {e['gold_rank']}, first {e['first']} "
        f"(cosine {e['cosine gold/first']})"
        for n in names
        for e in sets[n]["misses"]["examples"][:2]
    ]
    return table + "\n\n" + "\n".join(examples)


def _fmt(weights: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in weights.items())


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"
