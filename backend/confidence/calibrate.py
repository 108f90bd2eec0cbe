"""Threshold calibration from labelled queries (seed: overall-score-confidence.md, 9.2)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from backend.confidence.policy import Policy
from backend.confidence.scoring import ParentAggregate, confidence_from_parents, feature_values, percentile

LABELS = ("good", "ambiguous", "bad")
# Seed 9.2: T_low = P90 of bad, T_high = P10 of good, R_hitl = P50~P70 of ambiguous score2/score1.
T_LOW_PERCENTILE = 90
T_HIGH_PERCENTILE = 10
R_HITL_PERCENTILE = 60


class CalibrationError(ValueError):
    """The labelled set cannot calibrate a policy; the message says what to fix."""


def check_row(row: Any) -> None:
    """Raise CalibrationError unless `row` is {query, label, best_overall_score, score_ratio}."""
    if not isinstance(row, Mapping):
        raise CalibrationError(f"expected a JSON object, got {type(row).__name__}")
    if "label" not in row:
        raise CalibrationError("missing 'label' (good, ambiguous or bad)")
    if row["label"] not in LABELS:
        raise CalibrationError(f"label {row['label']!r} is not one of {', '.join(LABELS)}")
    if not _is_number(row.get("best_overall_score")):
        raise CalibrationError(f"best_overall_score must be a number, got {row.get('best_overall_score')!r}")
    ratio = row.get("score_ratio")
    if ratio is not None and not (_is_number(ratio) and 0.0 <= ratio <= 1.0):
        raise CalibrationError(f"score_ratio must be null or a number in [0, 1], got {ratio!r}")


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Mann-Whitney AUC: P(positive > negative), ties counting one half."""
    if not positives or not negatives:
        raise CalibrationError("AUC needs at least one good and one bad query")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def calibrate(
    labelled: Sequence[Mapping[str, Any]], base: Policy | None = None
) -> tuple[Policy, dict[str, Any]]:
    """T_low, T_high, R_hitl and the AUC from labelled queries; weights and rules come from `base`.

    The returned policy keeps base's version: save_new_policy assigns the next free one.
    """
    base = base or Policy(version="v1")
    for i, row in enumerate(labelled, 1):
        try:
            check_row(row)
        except CalibrationError as exc:
            raise CalibrationError(f"row {i}: {exc}") from None
    per_query_auc = _auc_or_none(labelled)
    labelled, anchors = _anchored(labelled, base)
    scores = {
        label: [float(r["best_overall_score"]) for r in labelled if r["label"] == label] for label in LABELS
    }
    ambiguous = [r for r in labelled if r["label"] == "ambiguous"]
    ratios = [float(r["score_ratio"]) for r in ambiguous if r.get("score_ratio") is not None]
    for label, why in (("bad", "T_low"), ("good", "T_high"), ("ambiguous", "R_hitl")):
        if not scores[label]:
            raise CalibrationError(f"no {label!r} rows: {why} is calibrated on them; label at least one")
    if not ratios:
        raise CalibrationError("no 'ambiguous' row has a score_ratio (score2/score1): R_hitl needs one")

    warnings = []
    if len(ratios) < len(ambiguous):
        warnings.append(
            f"{len(ambiguous) - len(ratios)} ambiguous rows have no score_ratio "
            "(a single parent) and were left out of R_hitl"
        )
    t_low, t_high = _thresholds(scores, warnings)
    r_hitl = percentile(ratios, R_HITL_PERCENTILE)
    separation = auc(scores["good"], scores["bad"])
    counts = {label: len(scores[label]) for label in LABELS}

    report = {
        "rows": len(labelled),
        "counts": counts,
        "T_low": t_low,
        "T_high": t_high,
        "R_hitl": r_hitl,
        "auc": separation,
        "auc_per_query_normalisation": per_query_auc,
        "normalization": "per_query" if anchors is None else "calibrated",
        "anchors": anchors,
        "warnings": warnings,
        "derived_from": base.version,
        "method": {
            "T_low": f"P{T_LOW_PERCENTILE} of bad best_overall_score",
            "T_high": f"P{T_HIGH_PERCENTILE} of good best_overall_score",
            "R_hitl": f"P{R_HITL_PERCENTILE} of ambiguous score2/score1",
            "auc": "Mann-Whitney, good vs bad by best_overall_score",
        },
    }
    policy = dataclasses.replace(
        base,
        t_low=t_low,
        t_high=t_high,
        r_hitl=r_hitl,
        anchors=anchors if anchors is not None else base.anchors,
        derived_from=base.version,
        calibrated_on=(
            f"{len(labelled)} labelled queries ({counts['good']} good, {counts['ambiguous']} "
            f"ambiguous, {counts['bad']} bad)"
        ),
        calibration={
            "date": datetime.now(UTC).date().isoformat(),
            "counts": counts,
            "auc": separation,
            "auc_per_query_normalisation": per_query_auc,
            "warnings": warnings,
            "method": report["method"],
        },
    )
    return policy, report


def _anchored(
    labelled: Sequence[Mapping[str, Any]], base: Policy
) -> tuple[Sequence[Mapping[str, Any]], dict[str, tuple[float, float]] | None]:
    """Seed 4's norm() with P10/P90 pooled over every candidate parent of the labelled run instead of
    one query's (the score keeps the absolute strength of the evidence): the rows rescored with those
    anchors, and the anchors. Rows without their parents are kept as they are (no anchors)."""
    if not (labelled and all(r.get("parents") for r in labelled)):
        return labelled, None
    pooled = feature_values([_parent(f) for r in labelled for f in r["parents"]])
    anchors = {k: (percentile(v, 10), percentile(v, 90)) for k, v in pooled.items()}
    anchored = dataclasses.replace(base, anchors=anchors)
    return [_rescored(r, anchored) for r in labelled], anchors


def _thresholds(scores: Mapping[str, list[float]], warnings: list[str]) -> tuple[float, float]:
    """T_low and T_high from the bad and good rows' scores (swapped, with a warning, when they cross)."""
    t_low = percentile(scores["bad"], T_LOW_PERCENTILE)
    t_high = percentile(scores["good"], T_HIGH_PERCENTILE)
    if t_low >= t_high:
        # Good and bad overlap. Swapping keeps T_low <= T_high and makes the overlap the medium band:
        # below it 90% of good queries are above, above it 90% of bad queries are below.
        warnings.append(
            f"T_low (P{T_LOW_PERCENTILE} of bad = {t_low:.4f}) >= T_high "
            f"(P{T_HIGH_PERCENTILE} of good = {t_high:.4f}): the tails of good and bad overlap; "
            "the two were swapped so the overlap reads as 'medium'"
        )
        t_low, t_high = t_high, t_low
    return t_low, t_high


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _parent(features: Mapping[str, Any]) -> ParentAggregate:
    return ParentAggregate(
        parent_id=str(features.get("parent_id", "")),
        title="",
        rrf_sum=float(features["rrf_sum"]),
        max_score=float(features["max_score"]),
        coverage=int(features["coverage"]),
        total_chunks=int(features["total_chunks"]),
        coverage_ratio=float(features["coverage_ratio"]),
        hit_chunks=int(features.get("hit_chunks", 1)),
    )


def _rescored(row: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
    parents = [_parent({**f, "parent_id": i}) for i, f in enumerate(row["parents"])]
    confidence = confidence_from_parents(parents, policy)
    return {
        **row,
        "best_overall_score": confidence["best_overall_score"],
        "score_ratio": confidence["score_ratio"],
    }


def _auc_or_none(rows: Sequence[Mapping[str, Any]]) -> float | None:
    good = [float(r["best_overall_score"]) for r in rows if r["label"] == "good"]
    bad = [float(r["best_overall_score"]) for r in rows if r["label"] == "bad"]
    return auc(good, bad) if good and bad else None
