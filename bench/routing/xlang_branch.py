"""Fit the cross-lingual branch of an answerability policy (v6) on both cross-lingual directions.

Usage: .venv/bin/python -m bench.routing.xlang_branch [--base v3] [--features cosine_lift ...]
                                                     [--max-leak 0.05] [--background-rank N] [--write v6]

Reads the stored searches of the two xlang groups (python -m bench.routing --variants xlang). Each
question's evidence is its best cross-lingual document (the one the branch would rank first). A
monotone logistic regression over --features gives the branch's weights; the cut on its linear score
is the lowest one at which neither direction answers more than --max-leak of its unanswerable
questions; the branch's bias puts that cut at the base policy's T_low, so routing answers a
cross-lingual document exactly above it. Leave-one-direction-out: weights and cut from one direction,
answer rates on the other. --write saves the base policy with the branch as a new version.
--background-rank N: a cross-lingual document's cosine_lift is read against the cosine of the vector
leg's row N (the branch's own background, v7) instead of the median of the scored head.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from backend.confidence.answerability import (
    background_cosine,
    document_evidence,
    features,
    ranked_background,
    scored_candidates,
)
from backend.confidence.answerability_policy import AnswerabilityPolicy, BranchModel
from backend.confidence.assess import load_score_policy
from backend.confidence.policy import POLICIES_DIR
from bench.routing.fit import DEPTH, LEG_DEPTH, WORK_DIR, fit_monotone
from bench.routing.records import QuestionRecord, load_records

DIRECTIONS = ("xlang.xquad-zh-dev-over-xquad-en-dev", "xlang.xquad-en-dev-over-xquad-zh-dev")
# Per question: the features of each of its cross-lingual documents, and whether it is answerable.
Row = tuple[list[dict[str, float]], bool]


def branch_rows(records: Sequence[QuestionRecord], background_rank: int | None = None) -> list[Row]:
    rows = []
    for r in records:
        candidates = r.searches["default"].candidates
        scored = scored_candidates(candidates, DEPTH, LEG_DEPTH)
        background = background_cosine(scored)
        if background_rank is not None:  # as assess.answerability_confidence reads a v7 branch
            background = ranked_background(candidates, background_rank)
        values = [features(d, background) for d in document_evidence(scored, r.terms, r.term_idfs, r.text)]
        rows.append(([v for v in values if v["cross_lingual"] == 1.0], r.answerable))
    return rows


def first(docs: list[dict[str, float]]) -> dict[str, float]:
    """What the fit reads of a question: its cross-lingual document of the highest cosine_lift (none:
    the features of no evidence, 0 for any feature a study adds)."""
    from backend.confidence.answerability import sentence_features

    blank = {"cosine_lift": 0.0, "comparable_coverage": 0.0, "comparable_agreement": 0.0}
    return max(
        docs, key=lambda v: v["cosine_lift"], default=defaultdict(float, {**blank, **sentence_features(None)})
    )


def linear(docs: list[dict[str, float]], weights: dict[str, float]) -> float:
    """The branch's linear score of the question: of its best document, as routing reads it."""
    return max((sum(w * v[n] for n, w in weights.items()) for v in docs), default=-math.inf)


def rates(rows: Sequence[Row], weights: dict[str, float], cut: float) -> dict[str, float]:
    """answerable -> answer and unanswerable -> answer when the branch answers above `cut`."""
    pos = [linear(x, weights) for x, y in rows if y]
    neg = [linear(x, weights) for x, y in rows if not y]
    return {
        "answerable_answered": sum(s >= cut for s in pos) / max(len(pos), 1),
        "unanswerable_answered": sum(s >= cut for s in neg) / max(len(neg), 1),
    }


def choose_cut(groups: Sequence[Sequence[Row]], weights: dict[str, float], max_leak: float) -> float:
    """The lowest cut (of the scores seen) at which no group answers over max_leak of its unanswerable
    questions; the midpoint to the next lower score, so it does not sit on a question."""
    scores = sorted({linear(x, weights) for rows in groups for x, _ in rows} - {-math.inf})
    for i, cut in enumerate(scores):
        if all(rates(rows, weights, cut)["unanswerable_answered"] <= max_leak for rows in groups):
            return (cut + scores[i - 1]) / 2 if i else cut
    return scores[-1] + 1.0


def fit_branch(groups: Sequence[Sequence[Row]], names: Sequence[str], max_leak: float) -> dict[str, Any]:
    rows = [row for g in groups for row in g]
    model = fit_monotone([first(x) for x, _ in rows], [y for _, y in rows], names)
    weights = {n: w for n, w in model["weights"].items() if w > 0} or model["weights"]
    return {"weights": weights, "cut": choose_cut(groups, weights, max_leak)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.xlang_branch", description=__doc__)
    parser.add_argument("--base", default="v3", help="the policy whose main model and thresholds it keeps")
    parser.add_argument("--features", nargs="+", default=["cosine_lift"])
    parser.add_argument(
        "--max-leak", type=float, default=0.05, help="unanswerable -> answer allowed per direction"
    )
    parser.add_argument(
        "--background-rank",
        type=int,
        help="the branch's background: the cosine of the vector leg's row of this rank (v7); "
        "default: the median of the scored head",
    )
    parser.add_argument("--write", metavar="VERSION")
    args = parser.parse_args(argv)
    rank = args.background_rank
    groups = {k: branch_rows(load_records(WORK_DIR / f"{k}.records.jsonl.gz"), rank) for k in DIRECTIONS}
    joint = fit_branch(list(groups.values()), args.features, args.max_leak)
    report: dict[str, Any] = {
        "joint": {**joint, **{k: rates(g, joint["weights"], joint["cut"]) for k, g in groups.items()}}
    }
    for held in DIRECTIONS:
        (train,) = [k for k in DIRECTIONS if k != held]
        fit = fit_branch([groups[train]], args.features, args.max_leak)
        report[f"fit on {train}"] = {
            **fit,
            "train": rates(groups[train], fit["weights"], fit["cut"]),
            "held out": rates(groups[held], fit["weights"], fit["cut"]),
        }
    print(json.dumps(report, indent=2))
    if args.write:
        base = load_score_policy(args.base)
        assert isinstance(base, AnswerabilityPolicy)
        # sigmoid(bias + w.x) >= T_low exactly when w.x >= cut
        bias = math.log(base.t_low / (1 - base.t_low)) - joint["cut"]
        policy = replace(
            base,
            version=args.write,
            derived_from=base.version,
            cross_lingual=BranchModel(bias=bias, weights=joint["weights"], background_rank=rank),
            calibration={
                **(base.calibration or {}),
                "cross_lingual": {
                    "date": datetime.now(UTC).date().isoformat(),
                    "command": "python -m bench.routing.xlang_branch "
                    + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
                    "method": "documents in the question's language: the base policy's model unchanged; a "
                    "cross-lingual document: logistic regression (IRLS, ridge 0.01, weights >= 0) on the "
                    "features of each question's best cross-lingual document over both xquad directions, "
                    f"bias set so the score reaches T_low at the lowest linear cut where neither direction "
                    f"answers over {args.max_leak:.0%} of its unanswerable questions; a cross-lingual "
                    "document's cosine_lift against "
                    + (f"the vector leg's row {rank}" if rank else "the median of the scored head"),
                    "cut": joint["cut"],
                    "results": report,
                },
            },
        )
        path = POLICIES_DIR / f"{args.write}.json"
        path.write_text(json.dumps(policy.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
