"""Fit the answerability policy on the routing benchmark's stored searches, leave-one-dataset-out.

Usage: .venv/bin/python -m bench.routing.fit [--sets NAME ...] [--write vN]

Reads the searches `python -m bench.routing` stored (.data/bench-cache/routing/<set>.records.jsonl.gz).
For each set held out, a logistic regression on the other sets' questions (features of the best
fused candidate document, backend/confidence/answerability.py) and thresholds chosen on those sets
only; the held-out set is scored with the real policy function. The printed table is the held-out
(LODO) figure per set; --write saves the fit on every set as a new policy file.
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
from backend.confidence.answerability_policy import FEATURES, AnswerabilityPolicy
from backend.confidence.assess import answerability_confidence
from backend.confidence.policy import POLICIES_DIR
from backend.embeddings import LocalEmbedder
from bench.common import DATASETS_DIR
from bench.common.beir import dataset_names
from bench.common.report import markdown_table
from bench.routing.metrics import auroc, route_of, shares, top_cosine, top_final, top_rrf
from bench.routing.records import QuestionRecord, load_records
from bench.routing.variants import has_native_labels

WORK_DIR = Path(__file__).resolve().parents[2] / ".data" / "bench-cache" / "routing"
L2 = 1e-2  # a little ridge: features are on 0..1-ish scales, the sets are small
DEPTH = 15
LEG_DEPTH = 60  # hybrid_search's rows per leg for 15 candidates: max(4 x 15, 40)
# Route targets of issue #18 the thresholds are chosen for (on the training sets only).
ANSWERABLE_ANSWERED = 0.95
UNANSWERABLE_ANSWERED = 0.03
ANSWERABLE_CLARIFIED = 0.02


def top_features(record: QuestionRecord, depth: int = DEPTH) -> dict[str, float]:
    """The features of the question's best-ranked document (the first of the product's ranking)."""
    candidates = record.searches["default"].candidates
    scored = scored_candidates(candidates, depth, LEG_DEPTH)
    docs = document_evidence(scored, record.terms, record.term_idfs)
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


def fit_policy(records: Sequence[QuestionRecord], version: str, names: Sequence[str]) -> AnswerabilityPolicy:
    rows = [top_features(r) for r in records]
    model = fit_monotone(rows, [r.answerable for r in records], names)
    policy = AnswerabilityPolicy(version=version, bias=model["bias"], weights=model["weights"], depth=DEPTH)
    per_set: dict[str, tuple[list[float], list[float]]] = {}
    for name, group in _by_set(records).items():
        scores = [_confidence(q, policy)["best_overall_score"] for q in group]
        per_set[name] = (
            [s for q, s in zip(group, scores, strict=True) if q.answerable],
            [s for q, s in zip(group, scores, strict=True) if not q.answerable],
        )
    t = choose_thresholds(per_set)
    policy = replace(policy, t_low=t["t_low"], t_high=t["t_high"])
    return replace(policy, r_hitl=choose_r_hitl(policy, records))


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


def lodo(records: Sequence[QuestionRecord], names: Sequence[str]) -> dict[str, Any]:
    out = {}
    groups = _by_set(records)
    for held in groups:
        train = [q for name, group in groups.items() if name != held for q in group]
        policy = fit_policy(train, "v3", names)
        out[held] = {"policy": policy.to_json(), **evaluate(policy, groups[held])}
    return out


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
            "held-out set",
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
    parser.add_argument("--sets", nargs="+", default=None)
    parser.add_argument("--features", nargs="+", default=list(FEATURES), choices=FEATURES)
    parser.add_argument("--write", metavar="VERSION", help="save the all-sets fit as this policy version")
    args = parser.parse_args(argv)
    sets = args.sets or [s for s in dataset_names(DATASETS_DIR) if not has_native_labels(s, DATASETS_DIR)]
    records = [q for name in sets for q in load_records(WORK_DIR / f"{name}.records.jsonl.gz")]
    results = lodo(records, args.features)
    print(render(results))
    if args.write:
        policy = fit_policy(records, args.write, args.features)
        held_out = {
            name: {k: r[k] for k in ("auroc", "baselines", "answerable", "unanswerable")}
            for name, r in results.items()
        }
        policy = replace(
            policy,
            calibrated_on=f"{len(records)} questions of {', '.join(sets)} (bench/routing half split)",
            embedding_model=LocalEmbedder.model_id,  # bench.routing searches with the local model
            calibration={
                "date": datetime.now(UTC).date().isoformat(),
                "method": "logistic regression (IRLS, ridge 0.01) on the features of each question's "
                "first-ranked document, weights >= 0; T_low = the cut with the smallest worst shortfall "
                "against answerable->answer >= 95% and unanswerable->answer <= 3% over the sets (logit "
                "midpoint of the tied cuts); T_high = P25 of answerable scores; R_hitl = smallest grid "
                "value clarifying <= 2% of answerable questions on every set",
                "leave_one_dataset_out": held_out,
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
        record.searches["default"].candidates, policy, terms=record.terms, term_idfs=record.term_idfs
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
