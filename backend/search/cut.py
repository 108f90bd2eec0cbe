"""Stage 3 of a search: diversity (no duplicate text, a cap per document), min_score, and the dynamic
top-k cut (results at least drop_ratio as good as the best)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backend.config import Settings
from backend.retrieval.rerank import diversify, dynamic_top_k
from backend.retrieval.rerank_policy import RerankPolicy
from backend.search.result_scores import at_least
from backend.search.types import ScoredChunk


@dataclass(frozen=True)
class CutRules:
    """The cut's knobs, read once from the settings and the rerank policy."""

    drop_ratio: float  # RAG_SIMILARITY_DROP_RATIO, else the rerank policy's calibrated one
    model_drop_ratio: float  # RERANK_DROP_RATIO: model relevance scores have their own scale
    per_doc_cap: int  # RAG_PER_DOC_CAP
    top_k_min: int  # RAG_TOP_K_MIN

    @classmethod
    def of(cls, settings: Settings, policy: RerankPolicy) -> CutRules:
        return cls(
            drop_ratio=settings.rag_similarity_drop_ratio or policy.drop_ratio,
            model_drop_ratio=settings.rerank_drop_ratio,
            per_doc_cap=settings.rag_per_doc_cap,
            top_k_min=settings.rag_top_k_min,
        )

    def ratio_for(self, ranked: Sequence[ScoredChunk]) -> float:
        """The ratio that reads these scores: the model's when a model reranker scored them."""
        model_scored = bool(ranked) and ranked[0].scored_by != "heuristic"
        return self.model_drop_ratio if model_scored else self.drop_ratio

    def keep(self, ranked: Sequence[ScoredChunk], *, top_k_min: int, top_k_max: int) -> int:
        """How many of `ranked` the dynamic cut keeps."""
        return dynamic_top_k(
            [c.final_score for c in ranked],
            top_k_min=top_k_min,
            top_k_max=top_k_max,
            drop_ratio=self.ratio_for(ranked),
        )

    def diversify(self, ranked: list[ScoredChunk]) -> list[ScoredChunk]:
        """No duplicate texts, and at most per_doc_cap chunks of a document ahead of the others.

        Applied to the results only: the candidates keep every chunk, since confidence counts how
        many chunks of a document were found. It reorders chunks of one document behind other
        documents, never documents among themselves, so a document's first (best) rank is kept.
        """
        return diversify(
            ranked,
            per_doc_cap=self.per_doc_cap,
            document=lambda c: c.document_id,
            content=lambda c: c.content_hash,
        )


def cut(
    ranked: list[ScoredChunk],
    rules: CutRules,
    *,
    min_score: float | None,
    dynamic: bool,
    top_k_max: int,
) -> tuple[list[ScoredChunk], int]:
    """The results (diversified, then min_score, then the cut) and how many min_score removed."""
    kept, below = at_least(ranked, min_score)
    if dynamic:
        keep = rules.keep(kept, top_k_min=min(rules.top_k_min, top_k_max), top_k_max=top_k_max)
    else:
        keep = min(top_k_max, len(kept))
    return kept[:keep], below
