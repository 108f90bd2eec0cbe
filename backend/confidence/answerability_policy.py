"""Versioned answerability policies (formula "answerability", v3 on): a logistic model over evidence
features, its thresholds, the clarification rule and the risk-flag rules. Fitted and reported by
bench/routing (python -m bench.routing.fit); docs/benchmarks.md says how.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from backend.confidence.policy import PolicyError, version_pattern

FORMULA = "answerability"
# The features a policy may weigh (backend/confidence/answerability.py computes them per document).
FEATURES = (
    "cosine_lift",
    "term_coverage",
    "leg_agreement",
    "comparable_coverage",
    "comparable_agreement",
    "cross_lingual",
    "cross_lingual_lift",
    "sentence_coverage",
    "answer_type",
    "answer_sentence",
)
# v5 on: read off the sentences of each candidate (backend/confidence/sentences.py), only when weighed.
SENTENCE_FEATURES = ("sentence_coverage", "answer_type", "answer_sentence")
# v4 on: the features that mean the same whatever the languages of question and passage.
LANGUAGE_AWARE_FEATURES = (
    "cosine_lift",
    "comparable_coverage",
    "comparable_agreement",
    "cross_lingual",
    "cross_lingual_lift",
)
# A branch's background row (BranchModel.background_rank) must lie within a default search's vector leg.
MAX_BACKGROUND_RANK = 60


@dataclass(frozen=True)
class AnswerabilityFlagRule:
    """Where the risk flags of an answerability policy start (each documented in answerability.py)."""

    lift_high: float = 0.25  # low_coverage: cosine_lift >= this ...
    coverage_low: float = 0.34  # ... and term_coverage < this
    sparse_ratio: float = 0.05  # sparse_evidence: chunks hit / total_chunks < this (totals given)
    huge_doc_chunks: int = 100  # huge_doc_sparse: total_chunks >= this ...
    huge_doc_ratio: float = 0.1  # ... and chunks hit / total_chunks < this


@dataclass(frozen=True)
class BranchModel:
    """A second logistic model for the documents one branch of a policy scores (v6: the cross-lingual
    ones, whose language differs from the question's). Its own bias and monotone weights over the
    policy's features, read against the policy's thresholds: a document of the branch is answered
    from when sigmoid(bias + sum(weight * feature)) >= T_low.

    background_rank (v7 on): the branch's cosine_lift is measured against the cosine of the vector leg's
    row of that rank (answerability.ranked_background) rather than the median of the scored head. A
    cross-lingual document's cosines sit lower than its question's language's, so the head's median,
    set by the nearest passages, says little of where its background lies; a fixed deeper rank does,
    and it does not move with the caller's prefetch depth. None: the main background."""

    bias: float
    weights: dict[str, float] = field(hash=False)
    background_rank: int | None = None

    def problems(self, where: str) -> list[str]:
        out = []
        if not self.weights:
            out.append(f"{where}: weights must name at least one feature")
        unknown = set(self.weights) - set(FEATURES)
        if unknown:
            out.append(f"{where}: unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        negative = [k for k, w in self.weights.items() if not (math.isfinite(w) and w >= 0)]
        if negative:
            out.append(f"{where}: weights must be finite and >= 0 (monotone score): {sorted(negative)}")
        if not math.isfinite(self.bias):
            out.append(f"{where}: bias must be a finite number")
        if self.background_rank is not None and not 1 <= self.background_rank <= MAX_BACKGROUND_RANK:
            out.append(f"{where}: background_rank must be between 1 and {MAX_BACKGROUND_RANK}")
        return out

    def to_json(self) -> dict[str, Any]:
        rank = {} if self.background_rank is None else {"background_rank": self.background_rank}
        return {"bias": self.bias, "weights": dict(self.weights), **rank}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BranchModel:
        rank = data.get("background_rank")
        return cls(
            bias=float(data["bias"]),
            weights={str(k): float(v) for k, v in data["weights"].items()},
            background_rank=None if rank is None else int(rank),
        )


@dataclass(frozen=True)
class AnswerabilityPolicy:
    """score = sigmoid(bias + sum(weight_f * feature_f)) per candidate document; the best one is the query's.

    T_low: below it the corpus is taken not to hold the answer (web fallback); T_high: from it the
    answer is taken to be there; R_hitl: a runner-up document that itself reaches T_high and scores at
    least R_hitl x the best one competes with it (need_hitl). depth, leg_depth: the score reads the
    first `depth` candidates of the fusion of each leg's first `leg_depth` rows (what a /search with
    the default prefetch fetches), whatever depth the caller's search had.
    """

    version: str
    bias: float
    weights: dict[str, float] = field(hash=False)
    t_low: float = 0.5
    t_high: float = 0.8
    r_hitl: float = 0.98
    depth: int = 15
    leg_depth: int = 60  # rows per leg of a `depth`-candidate hybrid_search: max(4 x depth, 40)
    risk_flags: AnswerabilityFlagRule = field(default_factory=AnswerabilityFlagRule)
    calibrated_on: str = ""
    derived_from: str | None = None
    calibration: dict[str, Any] | None = field(default=None, hash=False)
    embedding_model: str | None = None  # the model_id whose cosines it was fitted on; None: unknown
    # v6 on: the model of cross-lingual documents (None: the main model scores every document).
    cross_lingual: BranchModel | None = None

    def __post_init__(self) -> None:
        problems = []
        if not version_pattern().match(self.version):
            problems.append(f"version {self.version!r} must look like 'v1', 'v2', ...")
        unknown = set(self.weights) - set(FEATURES)
        if unknown:
            problems.append(f"unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        negative = [k for k, w in self.weights.items() if not (math.isfinite(w) and w >= 0)]
        if negative:
            # Monotone by construction: better evidence never lowers the score.
            problems.append(f"weights must be finite and >= 0 (monotone score): {sorted(negative)}")
        if not math.isfinite(self.bias):
            problems.append("bias must be a finite number")
        if self.cross_lingual is not None:
            problems += self.cross_lingual.problems("cross_lingual")
        for name in ("t_low", "t_high", "r_hitl"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} ({getattr(self, name)}) must be between 0 and 1")
        if self.t_low > self.t_high:
            problems.append(f"T_low ({self.t_low}) must not exceed T_high ({self.t_high})")
        if not 1 <= self.depth <= self.leg_depth:
            problems.append(f"depth ({self.depth}) must be between 1 and leg_depth ({self.leg_depth})")
        if problems:
            raise PolicyError(f"policy {self.version}: " + "; ".join(problems))

    @property
    def score_policy_version(self) -> str:
        return f"overall_{self.version}"

    @property
    def thresholds(self) -> dict[str, float]:
        return {"T_low": self.t_low, "T_high": self.t_high, "R_hitl": self.r_hitl}

    def model_for(self, cross_lingual: bool) -> tuple[float, dict[str, float]]:
        """The bias and weights that score a document: the cross-lingual branch's for a cross-lingual
        document when the policy has one, else the main model's."""
        if cross_lingual and self.cross_lingual is not None:
            return self.cross_lingual.bias, self.cross_lingual.weights
        return self.bias, self.weights

    @property
    def all_weights(self) -> dict[str, float]:
        """Every feature either model weighs (what the score must compute)."""
        branch = self.cross_lingual.weights if self.cross_lingual is not None else {}
        return {**branch, **self.weights}

    def to_json(self) -> dict[str, Any]:
        branch = {"cross_lingual": self.cross_lingual.to_json()} if self.cross_lingual is not None else {}
        return {
            "version": self.version,
            "formula": FORMULA,
            "score_policy_version": self.score_policy_version,
            "calibrated_on": self.calibrated_on,
            "derived_from": self.derived_from,
            "model": {"bias": self.bias, "weights": dict(self.weights)},
            **branch,
            "thresholds": self.thresholds,
            "depth": self.depth,
            "leg_depth": self.leg_depth,
            "risk_flags": dataclasses.asdict(self.risk_flags),
            "calibration": self.calibration,
            "embedding_model": self.embedding_model,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswerabilityPolicy:
        try:
            model, thresholds = data["model"], data["thresholds"]
            return cls(
                version=data["version"],
                bias=float(model["bias"]),
                weights={str(k): float(v) for k, v in model["weights"].items()},
                t_low=thresholds["T_low"],
                t_high=thresholds["T_high"],
                r_hitl=thresholds["R_hitl"],
                depth=int(data.get("depth", 15)),
                leg_depth=int(data.get("leg_depth", 60)),
                risk_flags=AnswerabilityFlagRule(**(data.get("risk_flags") or {})),
                calibrated_on=data.get("calibrated_on", ""),
                derived_from=data.get("derived_from"),
                calibration=data.get("calibration"),
                embedding_model=data.get("embedding_model"),
                cross_lingual=BranchModel.from_json(data["cross_lingual"])
                if data.get("cross_lingual")
                else None,
            )
        except KeyError as exc:
            raise PolicyError(f"policy is missing the key {exc.args[0]!r}") from exc
        except (TypeError, ValueError, AttributeError) as exc:
            raise PolicyError(f"policy {data.get('version', '?')}: {exc}") from exc
