"""A chat turn's retrieval options, per request (seed 000 passes budgets per request), and the one
budget they give."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from backend.budget import EvidenceBudget, budget_problem
from backend.config import MAX_MATCH_COUNT, Settings
from backend.errors import InvalidInput
from backend.retrieval.params import Mode


@dataclass(frozen=True)
class EvidenceOptions:
    """Per-request retrieval options of a chat turn (seed 000 passes budgets per request).

    None means the setting: top_k -> LOCAL_TOP_K (else RAG_TOP_K_MAX), step_top_k -> STEP_TOP_K,
    write_top_k -> WRITE_TOP_K, mode -> hybrid, filters -> none.
    """

    mode: Mode | None = None
    filters: dict[str, Any] | None = None
    infer_filters: bool = False  # the main search reads filters in the question (WhereBuilder)
    relax: bool | None = None
    min_score: float | None = None  # every search of the turn drops results scoring below it
    top_k: int | None = None
    step_top_k: int | None = None
    write_top_k: int | None = None
    reranker: str | None = None  # None: RERANK_DEFAULT
    collections: list[uuid.UUID] | None = None  # every search of the turn narrowed to them; None: all

    def budget(self, settings: Settings) -> EvidenceBudget:
        """The budget these options give, or a 422 naming the option that breaks a limit."""
        local = self.top_k or settings.local_top_k or settings.rag_top_k_max
        step = self.step_top_k or settings.step_top_k
        write = self.write_top_k or settings.write_top_k
        problem = budget_problem(
            local, step, write, max_top_k=settings.search_max_top_k, max_match_count=MAX_MATCH_COUNT
        )
        if problem:
            raise InvalidInput(problem)
        return EvidenceBudget.compute(local, step, write)
