"""Versioned rerank policies: which features score a candidate, their weights, and the dynamic cut.

A policy is a JSON file `policies/rerank_v<N>.json`, chosen by RAG_RERANK_POLICY and loaded once at
start-up, like the confidence policies. rerank_v1 is the seed's formula
(similarity x 0.7 + keyword_coverage x 0.25 + structure bonus 0.05); later versions are learned on
labelled questions by `python -m bench.rerank_study --fit` and say what they were validated on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from backend.versioned import VERSION, PolicyFiles

RERANK_POLICIES_DIR = Path(__file__).resolve().parent / "policies"
_VERSION = VERSION
_FILE = "rerank_{}.json"

# Every feature a policy may weight (computed per candidate by backend.retrieval.rerank).
FEATURES: dict[str, str] = {
    "similarity": "the seed's similarity: the cosine (or the RRF score / best with "
    "RAG_RERANK_SIMILARITY=rrf); the full-text score / best in full-text mode",
    "cosine": "cosine similarity of query and chunk embeddings (0 in full-text mode)",
    "full_text": "the BM25-style full-text score / the best of the query's candidates (0: no term)",
    "rrf": "the RRF score of the hybrid prefetch / the best of the query's candidates",
    "keyword_coverage": "share of the query's significant terms the chunk (title, headings, text) contains",
    "phrase_coverage": "share of the query's adjacent word pairs (Chinese: character pairs) in the chunk",
    "idf_coverage": "share of the query terms' idf (corpus rarity) among the chunk's tokens",
    "title_coverage": "share of the query's significant terms in the document title",
    "heading": "1 when the chunk starts with a Markdown heading (the seed's structure bonus)",
}

# linear: final_score is the weighted sum (the seed's scale).
# softmax: the weighted sum is a logit; final_score is the candidate's share of exp(logit) over the
#   query's candidates, so the cut's "best x drop_ratio" reads "at least drop_ratio as likely as the best".
Output = Literal["linear", "softmax"]


class RerankPolicyError(ValueError):
    """A rerank policy is unknown, missing, malformed or inconsistent."""


RERANK_POLICY_FILES = PolicyFiles("rerank policy", _FILE, "rerank_", RerankPolicyError)


@dataclass(frozen=True)
class RerankPolicy:
    version: str
    weights: dict[str, float]
    output: Output = "linear"
    drop_ratio: float = 0.6  # the dynamic cut keeps results with final_score >= best x drop_ratio
    description: str = ""
    embedding_model: str | None = None  # what the weights were fitted with (None: any)
    calibration: dict[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        problems = []
        if not _VERSION.match(self.version):
            problems.append(f"version {self.version!r} must look like 'v1', 'v2', ...")
        unknown = sorted(set(self.weights) - set(FEATURES))
        if unknown:
            problems.append(f"unknown features {unknown}; known: {', '.join(FEATURES)}")
        if not self.weights or not all(math.isfinite(w) for w in self.weights.values()):
            problems.append("weights must be finite numbers, at least one")
        if self.output not in ("linear", "softmax"):
            problems.append(f"output {self.output!r} must be 'linear' or 'softmax'")
        if not 0.0 < self.drop_ratio <= 1.0:
            problems.append(f"cut.drop_ratio ({self.drop_ratio}) must be in (0, 1]")
        if problems:
            raise RerankPolicyError(f"rerank policy {self.version}: " + "; ".join(problems))

    @property
    def name(self) -> str:
        """The name shown in diagnostics and stored with citations: rerank_v1, rerank_v2, ..."""
        return f"rerank_{self.version}"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "name": self.name,
            "description": self.description,
            "weights": self.weights,
            "output": self.output,
            "cut": {"drop_ratio": self.drop_ratio},
            "embedding_model": self.embedding_model,
            "calibration": self.calibration,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RerankPolicy:
        try:
            return cls(
                version=data["version"],
                weights={str(k): float(v) for k, v in data["weights"].items()},
                output=data.get("output", "linear"),
                drop_ratio=float(data["cut"]["drop_ratio"]),
                description=data.get("description", ""),
                embedding_model=data.get("embedding_model"),
                calibration=data.get("calibration"),
            )
        except KeyError as exc:
            raise RerankPolicyError(f"rerank policy is missing the key {exc.args[0]!r}") from exc
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, RerankPolicyError):
                raise
            raise RerankPolicyError(f"rerank policy {data.get('version', '?')}: {exc}") from exc


def available_rerank_versions(directory: Path = RERANK_POLICIES_DIR) -> list[str]:
    """The rerank policy versions in a directory, oldest first."""
    return RERANK_POLICY_FILES.versions(directory)


def load_rerank_policy(version: str, directory: Path = RERANK_POLICIES_DIR) -> RerankPolicy:
    """Read one policy file; `version` is 'v2' or 'rerank_v2'."""
    path, name, data = RERANK_POLICY_FILES.read(version, directory)
    policy = RerankPolicy.from_json(data)
    RERANK_POLICY_FILES.check_version(path, policy.version, name)
    return policy


def save_rerank_policy(policy: RerankPolicy, directory: Path = RERANK_POLICIES_DIR) -> Path:
    """Write `policy` under its own version; an existing file is never overwritten."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / _FILE.format(policy.version)
    try:
        with path.open("x", encoding="utf-8") as fh:
            json.dump(policy.to_json(), fh, ensure_ascii=False, indent=2)
            fh.write("\n")
    except FileExistsError as exc:
        raise RerankPolicyError(f"{path} exists; a shipped policy is never rewritten") from exc
    return path
