"""Versioned score policies (seed: overall-score-confidence.md, 9.4): weights, thresholds, flag rules."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backend.versioned import VERSION, PolicyFiles

POLICIES_DIR = Path(__file__).resolve().parent / "policies"
_VERSION = VERSION
CONFIDENCE_LEVELS = ("low", "medium", "high")
ANCHORED_FEATURES = ("rrf_sum", "max_score", "coverage", "log_chunks")
SEED_FORMULA = "overall"


class PolicyError(ValueError):
    """A policy file is missing, malformed or inconsistent."""


SCORE_POLICY_FILES = PolicyFiles("score policy version", "{}.json", "overall_", PolicyError)


def version_pattern() -> re.Pattern[str]:
    """What a version name looks like: v1, v2, ..."""
    return _VERSION


@dataclass(frozen=True)
class RiskFlagRule:
    """Where "high", "low", "极低" and "极大" of the seed's risk-flag table start (7.3)."""

    strength_high: float = 0.7  # low_coverage: S_strength >= this ...
    coverage_low: float = 0.3  # ... and S_coverage < this
    spike_max_high: float = 0.7  # single_spike: max_score_norm >= this ...
    spike_rrf_low: float = 0.3  # ... and rrf_sum_norm < this
    sparse_ratio: float = 0.05  # sparse_evidence: coverage_ratio < this
    huge_doc_chunks: int = 100  # huge_doc_sparse: total_chunks >= this ...
    huge_doc_ratio: float = 0.1  # ... and coverage_ratio < this
    # ambiguous_candidate uses R_hitl: "top2 very close to top1" is the HITL test itself (8.1).


@dataclass(frozen=True)
class WebFallbackRule:
    """Seed 8.2: fall back to the web on empty results, or on these levels unless HITL can resolve it."""

    on_empty: bool = True
    on_levels: tuple[str, ...] = ("low",)
    unless_hitl: bool = True  # "低置信 ≠ 必然联网": an ambiguous query is clarified, not searched online


@dataclass(frozen=True)
class Policy:
    """One versioned OverallScore policy: {α, β, w1, w2, w3, T_low, T_high, R_hitl} and its rules."""

    version: str
    alpha: float = 0.6
    beta: float = 0.5
    w1: float = 0.5
    w2: float = 0.3
    w3: float = 0.2
    t_low: float = 0.35
    t_high: float = 0.68
    r_hitl: float = 0.92
    risk_flags: RiskFlagRule = field(default_factory=RiskFlagRule)
    web_fallback: WebFallbackRule = field(default_factory=WebFallbackRule)
    calibrated_on: str = "seed defaults, not yet calibrated"
    derived_from: str | None = None
    calibration: dict[str, Any] | None = field(default=None, hash=False)
    # Normalisation (seed 4): None = per query (P10/P90 of this query's candidates, seed 4.2);
    # else fixed (P10, P90) anchors per feature, pooled over a labelled calibration run, so a query
    # whose best candidate is weak in absolute terms scores low (per-query scores cannot show that).
    anchors: dict[str, tuple[float, float]] | None = field(default=None, hash=False)
    # The embedding model (model_id) whose cosines the anchors and thresholds were calibrated on; None:
    # unknown. The retrieval service warns when it embeds with another one.
    embedding_model: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if not _VERSION.match(self.version):
            problems.append(f"version {self.version!r} must look like 'v1', 'v2', ...")
        for name in ("alpha", "beta", "t_low", "t_high", "r_hitl"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} ({getattr(self, name)}) must be between 0 and 1")
        if min(self.w1, self.w2, self.w3) < 0 or self.w1 + self.w2 + self.w3 <= 0:
            problems.append("w1, w2, w3 must be non-negative and not all 0")
        if self.t_low > self.t_high:
            problems.append(f"T_low ({self.t_low}) must not exceed T_high ({self.t_high})")
        if self.anchors is not None:
            missing = set(ANCHORED_FEATURES) - set(self.anchors)
            bad = [k for k, (lo, hi) in self.anchors.items() if not lo <= hi]
            if missing or bad:
                problems.append(f"anchors need (P10 <= P90) for {', '.join(ANCHORED_FEATURES)}")
        unknown = set(self.web_fallback.on_levels) - set(CONFIDENCE_LEVELS)
        if unknown:
            problems.append(f"web_fallback.on_levels has unknown levels {sorted(unknown)}")
        if problems:
            raise PolicyError(f"policy {self.version}: " + "; ".join(problems))

    @property
    def score_policy_version(self) -> str:
        """The name logged with every score (seed 9.4 and 10: e.g. overall_v1)."""
        return f"overall_{self.version}"

    @property
    def thresholds(self) -> dict[str, float]:
        """thresholds_used of the output contract."""
        return {"T_low": self.t_low, "T_high": self.t_high, "R_hitl": self.r_hitl}

    def to_json(self) -> dict[str, Any]:
        """The file form: the seed's names for weights and thresholds."""
        return {
            "version": self.version,
            "score_policy_version": self.score_policy_version,
            "calibrated_on": self.calibrated_on,
            "derived_from": self.derived_from,
            "weights": {"alpha": self.alpha, "beta": self.beta, "w1": self.w1, "w2": self.w2, "w3": self.w3},
            "thresholds": self.thresholds,
            "risk_flags": dataclasses.asdict(self.risk_flags),
            "web_fallback": {
                **dataclasses.asdict(self.web_fallback),
                "on_levels": list(self.web_fallback.on_levels),
            },
            "calibration": self.calibration,
            "embedding_model": self.embedding_model,
            "normalization": (
                {"mode": "per_query"}
                if self.anchors is None
                else {"mode": "calibrated", "anchors": {k: list(v) for k, v in self.anchors.items()}}
            ),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        """Parse the file form; a missing or unknown key is a PolicyError naming it."""
        try:
            weights, thresholds = data["weights"], data["thresholds"]
            fallback = dict(data.get("web_fallback") or {})
            if "on_levels" in fallback:
                fallback["on_levels"] = tuple(fallback["on_levels"])
            return cls(
                version=data["version"],
                alpha=weights["alpha"],
                beta=weights["beta"],
                w1=weights["w1"],
                w2=weights["w2"],
                w3=weights["w3"],
                t_low=thresholds["T_low"],
                t_high=thresholds["T_high"],
                r_hitl=thresholds["R_hitl"],
                risk_flags=RiskFlagRule(**(data.get("risk_flags") or {})),
                web_fallback=WebFallbackRule(**fallback),
                calibrated_on=data.get("calibrated_on", ""),
                derived_from=data.get("derived_from"),
                calibration=data.get("calibration"),
                anchors=_anchors(data.get("normalization") or {"mode": "per_query"}),
                embedding_model=data.get("embedding_model"),
            )
        except KeyError as exc:
            raise PolicyError(f"policy is missing the key {exc.args[0]!r}") from exc
        except TypeError as exc:  # an unknown key in risk_flags / web_fallback
            raise PolicyError(f"policy {data.get('version', '?')}: {exc}") from exc


def available_versions(directory: Path = POLICIES_DIR) -> list[str]:
    """The policy versions in a directory, oldest first."""
    return SCORE_POLICY_FILES.versions(directory)


def read_policy_file(version: str, directory: Path = POLICIES_DIR) -> tuple[Path, dict[str, Any]]:
    """The parsed JSON of one policy file; `version` is 'v1' or 'overall_v1'."""
    path, _name, data = SCORE_POLICY_FILES.read(version, directory)
    return path, data


def formula_of(data: dict[str, Any]) -> str:
    """Which score a policy file defines: "overall" (the seed's formula, v1/v2) unless it says otherwise."""
    return str(data.get("formula", SEED_FORMULA))


def seed_formula_versions(directory: Path = POLICIES_DIR) -> list[str]:
    """The versions in a directory that use the seed's OverallScore formula, oldest first."""
    out = []
    for version in available_versions(directory):
        try:
            if formula_of(read_policy_file(version, directory)[1]) == SEED_FORMULA:
                out.append(version)
        except PolicyError:
            continue  # a broken file is reported when it is loaded, not when listing
    return out


def load_policy(version: str, directory: Path = POLICIES_DIR) -> Policy:
    """Read one seed-formula policy file; `version` is 'v1' or 'overall_v1'.

    Another formula (v3's answerability) is refused with a PolicyError: it needs other inputs, see
    backend.confidence.assess.load_score_policy.
    """
    path, name, data = SCORE_POLICY_FILES.read(version, directory)
    if formula_of(data) != SEED_FORMULA:
        raise PolicyError(
            f"{path} defines the {formula_of(data)!r} score, not the seed's OverallScore "
            "(fitted by `python -m bench.routing.fit`, read by backend.confidence.assess.load_score_policy)"
        )
    policy = Policy.from_json(data)
    SCORE_POLICY_FILES.check_version(path, policy.version, name)
    return policy


def save_new_policy(policy: Policy, directory: Path = POLICIES_DIR) -> tuple[Path, Policy]:
    """Write `policy` as a new version in `directory`; an existing file is never overwritten.

    The number follows both the directory's newest version and the version `policy` carries (the one
    it was derived from), so a calibrated copy of the shipped v1 is v2 even in an empty directory.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    newest = max([int(v[1:]) for v in available_versions(directory)] + [int(policy.version[1:])])
    number = newest + 1
    while True:
        saved = dataclasses.replace(policy, version=f"v{number}")
        path = directory / f"{saved.version}.json"
        try:
            with path.open("x", encoding="utf-8") as fh:  # "x": fails rather than overwrite
                json.dump(saved.to_json(), fh, ensure_ascii=False, indent=2)
                fh.write("\n")
            return path, saved
        except FileExistsError:  # written by someone else since we listed the directory
            number += 1


def _anchors(normalization: dict[str, Any]) -> dict[str, tuple[float, float]] | None:
    mode = normalization.get("mode")
    if mode == "per_query":
        return None
    if mode != "calibrated":
        raise PolicyError(f"normalization mode {mode!r} must be 'per_query' or 'calibrated'")
    return {k: (float(v[0]), float(v[1])) for k, v in normalization["anchors"].items()}
