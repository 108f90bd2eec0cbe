"""How many evidence chunks each retrieval stage keeps (seed: evidence-retention.md, 通用语义 and 一)."""

from __future__ import annotations

from dataclasses import dataclass

# Seed section 一: actual_recall = max(80, result_limit x 4),
# local_recall_k = min(actual_recall, result_limit x 2).
RECALL_FLOOR = 80
RECALL_MULTIPLIER = 4
LOCAL_RECALL_MULTIPLIER = 2


@dataclass(frozen=True)
class EvidenceBudget:
    """The Chat path's evidence budget, derived once from the three user-facing knobs."""

    local_top_k: int  # the retrieval budget passed to search(top_k=...)
    step_k: int  # per-retrieval-call keep limit after global rerank; also the call's result_limit
    write_k: int  # evidence cap for one output unit (one chat answer) entering the LLM context
    actual_recall: int  # candidates recalled per local leg, so the rerank has enough to choose from
    local_recall_k: int  # local output after its own rerank, the local share of the global fusion

    @property
    def result_limit(self) -> int:
        """The seed's `result_limit`: the same number as step_k (step_top_k or local_top_k)."""
        return self.step_k

    @classmethod
    def compute(
        cls, local_top_k: int, step_top_k: int | None = None, write_top_k: int | None = None
    ) -> EvidenceBudget:
        """Derive the budget: step_k = step_top_k or local_top_k, write_k = write_top_k or step_k."""
        _check_positive("local_top_k", local_top_k)
        _check_positive("step_top_k", step_top_k, optional=True)
        _check_positive("write_top_k", write_top_k, optional=True)
        step_k = step_top_k or local_top_k
        write_k = write_top_k or step_k
        # The seed does not forbid write_k > step_k: the LLM then simply sees every one of the step_k
        # chunks (EvidenceSynthesizer(max_chunks=write_k) takes at most what exists).
        actual_recall = max(RECALL_FLOOR, step_k * RECALL_MULTIPLIER)
        local_recall_k = min(actual_recall, step_k * LOCAL_RECALL_MULTIPLIER)
        return cls(local_top_k, step_k, write_k, actual_recall, local_recall_k)


def _check_positive(name: str, value: int | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")


def budget_problem(
    local_top_k: int, step_top_k: int | None, write_top_k: int | None, *, max_top_k: int, max_match_count: int
) -> str | None:
    """Why this budget cannot run within the search limits (SEARCH_MAX_TOP_K, hybrid_search's
    match_count cap), or None. Settings check it at start-up and /chat per request, so a budget is
    refused with its name instead of every search failing later."""
    for name, value in (("top_k", local_top_k), ("step_top_k", step_top_k), ("write_top_k", write_top_k)):
        if value is not None and value > max_top_k:
            return f"{name} ({value}) exceeds the limit of {max_top_k} (SEARCH_MAX_TOP_K)"
    budget = EvidenceBudget.compute(local_top_k, step_top_k, write_top_k)
    if budget.local_recall_k > max_top_k:
        return (
            f"step_top_k ({budget.step_k}) makes each chat search keep {budget.local_recall_k} chunks "
            f"(2 x step_top_k), above the limit of {max_top_k} (SEARCH_MAX_TOP_K): "
            f"use at most {max_top_k // 2}"
        )
    if budget.actual_recall > max_match_count:
        return (
            f"step_top_k ({budget.step_k}) asks {budget.actual_recall} candidates of the database "
            f"(4 x step_top_k); hybrid_search returns at most {max_match_count}"
        )
    return None
