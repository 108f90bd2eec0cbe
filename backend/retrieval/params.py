"""The one mapping from settings to the parameters of the SQL retrieval functions.

Each field of HybridParams is a named parameter of `hybrid_search` and/or `match_documents`
(sql/*.sql) and names the setting it comes from. A new SQL knob is one field here (plus its setting);
the service, the repository and every benchmark pick it up.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.config import Settings

Mode = Literal["hybrid", "vector", "fulltext"]
HYBRID, MATCH, TERMS = "hybrid_search", "match_documents", "hybrid_search_terms"


def _knob(setting: str, *functions: str) -> Any:
    return field(metadata={"setting": setting, "functions": functions or (HYBRID,)})


@dataclass(frozen=True)
class HybridParams:
    """Tuning knobs passed to the SQL functions (field name = SQL parameter name)."""

    full_text_weight: float = _knob("rag_full_text_weight")
    semantic_weight: float = _knob("rag_semantic_weight")
    rrf_k: int = _knob("rag_rrf_k")
    candidate_count: int | None = _knob("rag_candidate_count")
    ef_search: int = _knob("rag_hnsw_ef_search", HYBRID, MATCH)
    filtered_ef_search: int = _knob("rag_hnsw_filtered_ef_search", HYBRID, MATCH)
    min_similarity: float = _knob("rag_min_similarity", MATCH)
    exact_scan_threshold: int = _knob("rag_exact_scan_threshold", HYBRID, MATCH)
    common_term_ratio: float = _knob("rag_common_term_ratio", HYBRID, TERMS)
    common_term_min_df: int = _knob("rag_common_term_min_df", HYBRID, TERMS)
    match_df_budget: int = _knob("rag_match_df_budget", HYBRID, TERMS)
    length_norm: float = _knob("rag_length_norm", HYBRID)

    @classmethod
    def from_settings(cls, settings: Settings) -> HybridParams:
        return cls(**{f.name: getattr(settings, f.metadata["setting"]) for f in dataclasses.fields(cls)})

    def for_mode(self, mode: Mode) -> HybridParams:
        """Full-text mode is hybrid_search with the vector leg weighted 0 (no vector work is done)."""
        if mode == "fulltext":
            return dataclasses.replace(self, full_text_weight=1.0, semantic_weight=0.0)
        return self

    def sql_args(self, function: str) -> dict[str, Any]:
        """The knobs `function` takes, by parameter name."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if function in f.metadata["functions"]
        }
