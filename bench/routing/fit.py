"""Fit the answerability policy on the routing benchmark's stored searches, leave-one-out.

Usage: .venv/bin/python -m bench.routing.fit [--variants KIND ...] [--holdout group|variant|set]
                                            [--features NAME ...] [--write vN]

Reads the searches `python -m bench.routing` stored (.data/bench-cache/routing/<key>.records.jsonl.gz),
one group per variant and set (monolingual cmrc2018-dev, keyword.drcd-dev, xlang.…, combined, …).
For each group held out, a logistic regression on the questions of the groups left for training
(features of the best fused candidate document, backend/confidence/answerability.py) and thresholds
chosen on those groups only; the held-out group is scored with the real policy function.
--holdout: group (every other group trains, except the mixed corpus, which repeats the monolingual
questions), variant (no group of the held-out variant trains: the score has never seen that kind of
question) or set (no group sharing a development set with it trains). The printed table is the
held-out figure per group; --write saves the fit on every group as a new policy file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from backend.confidence.answerability import background_cosine, document_evidence, features, scored_candidates
from backend.confidence.answerability_policy import FEATURES, LANGUAGE_AWARE_FEATURES, AnswerabilityPolicy
from backend.confidence.assess import answerability_confidence
from backend.confidence.policy import POLICIES_DIR
from backend.embeddings import LocalEmbedder
from bench.common import DATASETS_DIR
from bench.common.beir import dataset_names
from bench.common.report import markdown_table
from bench.routing.metrics import auroc, route_of, shares, top_cosine, top_final, top_rrf
from bench.routing.records import QuestionRecord, load_records
from bench.routing.split import COMBINED
from bench.routing.variants import KINDS, PARALLEL, has_native_labels

WORK_DIR = Path(__file__).resolve().parents[2] / ".data" / "bench-cache" / "routing"
L2 = 1e-2  # a little ridge: features are on 0..1-ish scales, the sets are small
DEPTH = 15
LEG_DEPTH = 60  # hybrid_search's rows per leg for 15 candidates: max(4 x 15, 40)
HOLDOUTS = ("group", "variant", "set")
# The variants whose groups choose the thresholds (the weights learn from every training group): the
# route targets are met on full questions first; harder variants are what the features must carry.
THRESHOLD_VARIANTS = ("monolingual",)
# Route targets of issue #18 the thresholds are chosen for (on the training sets only).
ANSWERABLE_ANSWERED = 0.95
UNANSWERABLE_ANSWERED = 0.03
ANSWERABLE_CLARIFIED = 0.02


def top_features(record: QuestionRecord, depth: int = DEPTH) -> dict[str, float]:
    """The features of the question's best-ranked document (the first of the product's ranking)."""
    candidates = record.searches["default"].candidates
    scored = scored_candidates(candidates, depth, LEG_DEPTH)
    docs = document_evidence(scored, record.terms, record.term_idfs, record.text)
    first = candidates[0].document_id if candidates else None
    doc = next((d for d in docs if d.parent_id == first), docs[0] if docs else None)
    if doc is None:
        return dict.fromkeys(FEATURES, 0.0)
    return features(doc, background_cosine(scored))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> np.ndarray:
    """Newton-Raphson (IRLS) for [bias, weights...], ridge on the weights only."""
    design = np.column_stack([np.ones(len(x)), x])
    w = np.zeros(design.shape[1])
    ridge = l2 * np.diag(np.r_[0.0, np.ones(design.shape[1] - 1)])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        gradient = design.T @ (p - y) + ridge @ w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + ridge + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def fit_monotone(rows: Sequence[dict[str, float]], labels: Sequence[bool], names: Sequence[str]) -> dict:
    """Fit; a feature whose weight comes out negative is dropped and the rest refitted (monotone)."""
    names = list(names)
    y = np.array(labels, dtype=float)
    while True:
        x = np.array([[r[n] for n in names] for r in rows])
        w = fit_logistic(x, y)
        if (w[1:] >= 0).all() or len(names) == 1:
            return {"bias": float(w[0]), "weights": {n: float(v) for n, v in zip(names, w[1:], strict=True)}}
        names.pop(int(np.argmin(w[1:])))


def choose_thresholds(per_set: dict[str, tuple[list[float], list[float]]]) -> dict[str, Any]:
    """T_low: the cut whose worst shortfall against the route targets over the training sets is
    smallest (answerable -> answer >= 95%, unanswerable -> answer <= 3%, each set on its own), the
    logit midpoint of the best cuts; T_high: P25 of the answerable scores."""
    cuts = sorted({s for pos, neg in per_set.values() for s in (*pos, *neg)})

    def worst(t: float) -> float:
        shortfalls = []
        for pos, neg in per_set.values():
            answered = sum(s >= t for s in pos) / max(len(pos), 1)
            leaked = sum(s >= t for s in neg) / max(len(neg), 1)
            shortfalls += [ANSWERABLE_ANSWERED - answered, leaked - UNANSWERABLE_ANSWERED]
        return max(0.0, *shortfalls)

    scored = [(round(worst(t), 6), t) for t in cuts]
    best = min(w for w, _t in scored)
    tied = [t for w, t in scored if w == best]
    t_low = _sigmoid((_logit(min(tied)) + _logit(max(tied))) / 2)
    pooled = [s for pos, _neg in per_set.values() for s in pos]
    return {"t_low": t_low, "t_high": max(t_low, _quantile(pooled, 0.25)), "worst_shortfall": best}


def choose_r_hitl(policy: AnswerabilityPolicy, records: Sequence[QuestionRecord]) -> float:
    """The smallest R_hitl (of a grid) that clarifies at most ANSWERABLE_CLARIFIED of every
    training set's answerable questions."""
    grid = [0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 1.0]
    for r in grid:
        candidate = replace(policy, r_hitl=r)
        worst = 0.0
        for group in _by_set(records).values():
            answerable = [q for q in group if q.answerable]
            hitl = sum(_confidence(q, candidate)["need_hitl"] for q in answerable)
            worst = max(worst, hitl / max(len(answerable), 1))
        if worst <= ANSWERABLE_CLARIFIED:
            return r
    return 1.0


def fit_policy(
    records: Sequence[QuestionRecord],
    version: str,
    names: Sequence[str],
    threshold_records: Sequence[QuestionRecord] | None = None,
) -> AnswerabilityPolicy:
    """Weights from `records`; thresholds from `threshold_records` (default: the same)."""
    rows = [top_features(r) for r in records]
    model = fit_monotone(rows, [r.answerable for r in records], names)
    policy = AnswerabilityPolicy(version=version, bias=model["bias"], weights=model["weights"], depth=DEPTH)
    per_set: dict[str, tuple[list[float], list[float]]] = {}
    for name, group in _by_set(threshold_records or records).items():
        scores = [_confidence(q, policy)["best_overall_score"] for q in group]
        per_set[name] = (
            [s for q, s in zip(group, scores, strict=True) if q.answerable],
            [s for q, s in zip(group, scores, strict=True) if not q.answerable],
        )
    t = choose_thresholds(per_set)
    policy = replace(policy, t_low=t["t_low"], t_high=t["t_high"])
    return replace(policy, r_hitl=choose_r_hitl(policy, threshold_records or records))


def evaluate(policy: AnswerabilityPolicy, records: Sequence[QuestionRecord]) -> dict[str, Any]:
    confidences = [_confidence(q, policy) for q in records]
    pos = [c["best_overall_score"] for q, c in zip(records, confidences, strict=True) if q.answerable]
    neg = [c["best_overall_score"] for q, c in zip(records, confidences, strict=True) if not q.answerable]
    routes = [route_of(c, ("low", "medium")) for c in confidences]
    baselines = {}
    for name, fn in (("cosine", top_cosine), ("rrf", top_rrf), ("final", top_final)):
        values = [fn(q.searches["default"].candidates) for q in records]
        baselines[name] = auroc(
            [v for q, v in zip(records, values, strict=True) if q.answerable],
            [v for q, v in zip(records, values, strict=True) if not q.answerable],
        )
    return {
        "auroc": auroc(pos, neg),
        "baselines": baselines,
        "answerable": shares([x for q, x in zip(records, routes, strict=True) if q.answerable]),
        "unanswerable": shares([x for q, x in zip(records, routes, strict=True) if not q.answerable]),
    }


def variant_of(key: str) -> str:
    """The variant kind of a records key ("cmrc2018-dev", "keyword.drcd-dev", "combined", ...)."""
    if key == COMBINED:
        return "mixed"
    kind = key.split(".", 1)[0]
    return kind if "." in key and kind in KINDS else "monolingual"


def sets_of(key: str) -> set[str]:
    """The development sets whose questions or passages a group holds, with their parallel sets (the
    same questions and paragraphs in the other language); the mixed corpus: see training_groups."""
    if key == COMBINED:
        return set()
    label = key.split(".", 1)[1] if variant_of(key) != "monolingual" else key
    named = set(label.split("-over-"))
    return named | {b for a, b in PARALLEL if a in named}


def training_groups(held: str, keys: Sequence[str], holdout: str) -> list[str]:
    """The groups a held-out group's policy is fitted on (see the module docstring)."""
    others = [k for k in keys if k != held and k != COMBINED]
    if holdout == "variant":
        return [k for k in others if variant_of(k) != variant_of(held)]
    if holdout == "set":  # the mixed corpus holds every article-split set
        article = {s for k in keys if variant_of(k) == "monolingual" for s in sets_of(k)}
        mine = article if held == COMBINED else sets_of(held)
        return [k for k in others if not sets_of(k) & mine]
    return others


def lodo(
    groups: dict[str, list[QuestionRecord]],
    names: Sequence[str],
    holdout: str = "group",
    threshold_variants: Sequence[str] = THRESHOLD_VARIANTS,
) -> dict[str, Any]:
    out = {}
    for held in groups:
        train = training_groups(held, list(groups), holdout)
        records = [q for k in train for q in groups[k]]
        chosen = [q for k in train if variant_of(k) in threshold_variants for q in groups[k]]
        policy = fit_policy(records, "v3", names, chosen or records)
        out[held] = {"policy": policy.to_json(), "trained_on": train, **evaluate(policy, groups[held])}
    return out


def stored_groups(variants: Sequence[str], sets: Sequence[str] | None) -> list[str]:
    """The record files of `variants` in WORK_DIR (of `sets` only, when given), in KINDS order."""
    stems = sorted(p.name.removesuffix(".records.jsonl.gz") for p in WORK_DIR.glob("*.records.jsonl.gz"))
    keys = [k for kind in KINDS if kind in variants for k in stems if variant_of(k) == kind]
    if sets:
        keys = [k for k in keys if k == COMBINED or sets_of(k) & set(sets)]
    return keys


def render(results: dict[str, Any]) -> str:
    rows = []
    for name, r in results.items():
        p = r["policy"]
        b = r["baselines"]
        rows.append(
            [
                name,
                f"**{r['auroc']:.4f}**",
                f"{max(b.values()):.4f}",
                " ".join(f"{k}={v:.2f}" for k, v in p["model"]["weights"].items())
                + f" bias={p['model']['bias']:.2f}",
                "{T_low:.3f} / {T_high:.3f} / {R_hitl}".format(**p["thresholds"]),
                " / ".join(f"{100 * r['answerable'][k]:.1f}%" for k in ("answer", "clarify", "web_fallback")),
                " / ".join(
                    f"{100 * r['unanswerable'][k]:.1f}%" for k in ("answer", "clarify", "web_fallback")
                ),
            ]
        )
    return markdown_table(
        [
            "held-out group",
            "AUROC",
            "best baseline",
            "weights (fit on the others)",
            "T_low / T_high / R_hitl",
            "answerable → a / c / w",
            "unanswerable → a / c / w",
        ],
        rows,
        "lrrllll",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.fit", description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=None, help="development sets (default: all stored)")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=["monolingual"],
        choices=KINDS,
        help="variants whose stored searches the fit reads (default: monolingual, as v3 was fitted)",
    )
    parser.add_argument("--holdout", choices=HOLDOUTS, default="group", help="what one fold leaves out")
    parser.add_argument(
        "--threshold-variants",
        nargs="+",
        default=list(THRESHOLD_VARIANTS),
        choices=KINDS,
        help="variants whose groups choose T_low / T_high / R_hitl (the weights learn from all)",
    )
    parser.add_argument(
        "--features",
        nargs="+",
        default=None,
        choices=FEATURES,
        help="default: the language-aware features when a cross-lingual variant is read, else v3's",
    )
    parser.add_argument("--write", metavar="VERSION", help="save the all-groups fit as this policy version")
    args = parser.parse_args(argv)
    sets = args.sets or [s for s in dataset_names(DATASETS_DIR) if not has_native_labels(s, DATASETS_DIR)]
    sets = sets if args.sets or "native" not in args.variants else None
    keys = stored_groups(args.variants, sets)
    if not keys:
        print(f"no stored searches of {', '.join(args.variants)} in {WORK_DIR}: run python -m bench.routing")
        return 2
    names = args.features or list(
        LANGUAGE_AWARE_FEATURES if set(args.variants) - {"monolingual"} else FEATURES[:3]
    )
    groups = {k: load_records(WORK_DIR / f"{k}.records.jsonl.gz") for k in keys}
    for k, group in groups.items():  # fit.py groups by q.set: one group per record file
        for q in group:
            q.set = k
    results = lodo(groups, names, args.holdout, args.threshold_variants)
    print(render(results))
    if args.write:
        records = [q for k in keys if k != COMBINED for q in groups[k]]
        chosen = [
            q for k in keys if k != COMBINED and variant_of(k) in args.threshold_variants for q in groups[k]
        ]
        policy = fit_policy(records, args.write, names, chosen or records)
        held_out = {
            name: {k: r[k] for k in ("auroc", "baselines", "answerable", "unanswerable")}
            for name, r in results.items()
        }
        policy = replace(
            policy,
            calibrated_on=f"{len(records)} questions of {', '.join(k for k in keys if k != COMBINED)} "
            "(bench/routing variants)",
            embedding_model=LocalEmbedder.model_id,  # bench.routing searches with the local model
            calibration={
                "date": datetime.now(UTC).date().isoformat(),
                "command": "python -m bench.routing.fit "
                + " ".join(argv if argv is not None else sys.argv[1:]),
                "method": "logistic regression (IRLS, ridge 0.01) on the features of each question's "
                "first-ranked document, weights >= 0, over every group but the mixed corpus (it repeats "
                "the monolingual questions); T_low = the cut with the smallest worst shortfall against "
                "answerable->answer >= 95% and unanswerable->answer <= 3% over the groups of "
                f"{', '.join(args.threshold_variants)} (logit midpoint of the tied cuts); T_high = P25 of "
                "their answerable scores; R_hitl = smallest grid value clarifying <= 2% of their "
                "answerable questions",
                f"leave_one_{args.holdout}_out": held_out,
            },
        )
        path = POLICIES_DIR / f"{args.write}.json"
        try:
            with path.open("x", encoding="utf-8") as fh:  # a shipped version is never rewritten
                fh.write(json.dumps(policy.to_json(), ensure_ascii=False, indent=2) + "\n")
        except FileExistsError:
            print(f"\n{path} exists; policies are never overwritten: choose a new version", file=sys.stderr)
            return 2
        print(f"\nwrote {path}")
    return 0


def _confidence(record: QuestionRecord, policy: AnswerabilityPolicy) -> dict[str, Any]:
    return answerability_confidence(
        record.searches["default"].candidates,
        policy,
        terms=record.terms,
        term_idfs=record.term_idfs,
        question=record.text,
    )


def _by_set(records: Sequence[QuestionRecord]) -> dict[str, list[QuestionRecord]]:
    groups: dict[str, list[QuestionRecord]] = {}
    for q in records:
        groups.setdefault(q.set, []).append(q)
    return groups


def _quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.array(values, dtype=float), q)) if values else 0.5


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


if __name__ == "__main__":
    raise SystemExit(main())
