"""The relevance gate of chat evidence (and research's pool): what is evidence at all, before the one
truncation - a passage sharing a share of the question's terms or very close, or across languages the
passage the confidence scored as answering - and the global rerank that applies it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from backend.auth.identity import Identity
from backend.config import Settings
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchResult


def is_relevant(chunk: ScoredChunk, settings: Settings) -> bool:
    """Evidence worth showing the model: shares a share of the query's terms, or is very close."""
    return chunk.keyword_coverage >= settings.chat_min_keyword_coverage or (
        chunk.similarity is not None and chunk.similarity >= settings.chat_min_similarity
    )


CROSS_LINGUAL_TIE = 0.02  # a cross-lingual document's chunks this close to its best cosine are evidence


def relevance_gate(search: SearchResult, settings: Settings) -> Callable[[ScoredChunk], bool]:
    """The turn's relevance gate: `is_relevant`, or - in a document of another language than the
    question, which the confidence scores as holding the answer (overall score >= T_low) - the chunk
    that scored it (and its near ties). Across languages no term is shared and the cosines sit below
    CHAT_MIN_SIMILARITY, so without this the route said "answer" and the gate then dropped the very
    evidence it stood on (issue 26 item 1: the turn replied "not found")."""
    answering = _answering_cross_lingual(search.confidence)

    def relevant(chunk: ScoredChunk) -> bool:
        if is_relevant(chunk, settings):
            return True
        best = answering.get(str(chunk.document_id))
        return (
            best is not None and chunk.similarity is not None and chunk.similarity >= best - CROSS_LINGUAL_TIE
        )

    return relevant


def _answering_cross_lingual(confidence: dict[str, Any]) -> dict[str, float]:
    """Cross-lingual documents scored at or above T_low -> their best chunk's cosine."""
    low = (confidence.get("thresholds_used") or {}).get("T_low")
    if low is None:
        return {}
    out = {}
    for parent in confidence.get("top_parents") or []:
        features = parent.get("features") or {}
        score, cosine = parent.get("overall_score"), features.get("cosine")
        if features.get("cross_lingual") and score is not None and score >= low and cosine is not None:
            out[str(parent["parent_id"])] = float(cosine)
    return out


def global_rerank(
    search: SearchResult, retrieval: RetrievalService, settings: Settings, identity: Identity
) -> Callable[[list[ScoredChunk]], list[ScoredChunk]]:
    """Seed §四 Step 2: main and gap candidates scored together against the question (not against the
    gap query that found them), best first; candidates below the relevance gate are left out."""
    gate = relevance_gate(search, settings)

    def rerank(items: list[ScoredChunk]) -> list[ScoredChunk]:
        rescored = retrieval.rescore(search, items, identity=identity)
        ranked = sorted(rescored, key=lambda c: -c.final_score)  # stable: main before gap on ties
        return [c for c in ranked if gate(c)]

    return rerank
