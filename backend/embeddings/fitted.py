"""Policies fitted on one embedding model's cosines (the confidence and rerank policies), checked against
the model a service embeds with: a mismatch is a warning, since levels and cuts drift but still work."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from backend.confidence.assess import ScorePolicy
from backend.embeddings.base import Embedder
from backend.errors import ProviderError
from backend.retrieval.rerank_policy import RerankPolicy


@dataclass(frozen=True)
class Fitted:
    """One policy: its name, the model_id it was fitted on (None: any), what its numbers steer, how to
    refit it."""

    name: str
    embedding_model: str | None
    steers: str
    refit: str


def fitted_model_warnings(embedder: Embedder, policies: Iterable[Fitted]) -> list[str]:
    """One warning per policy fitted on another model than `embedder`'s (none when it cannot be asked)."""
    try:
        model_id = embedder.model_id
    except ProviderError:
        return []  # a server that must be asked for its size is down: searches will say so
    return [
        f"{p.name} was fitted with {p.embedding_model}; this service embeds with {model_id}: "
        f"{p.steers} may differ ({p.refit})"
        for p in policies
        if p.embedding_model and p.embedding_model != model_id
    ]


def policies_fitted(rerank: RerankPolicy, confidence: ScorePolicy) -> list[Fitted]:
    """The rerank and confidence policies a retrieval service loaded, as Fitted."""
    return [
        Fitted(
            f"rerank policy {rerank.name}",
            rerank.embedding_model,
            "rankings and the dynamic cut",
            "fit one: python -m bench.rerank --fit-version vN",
        ),
        Fitted(
            f"confidence policy {confidence.score_policy_version}",
            confidence.embedding_model,
            "confidence levels, clarifying questions and the web fallback",
            "recalibrate: python -m backend calibrate LABELS.jsonl, README 'Model providers'",
        ),
    ]
