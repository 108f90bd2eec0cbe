"""Stage 2 (heuristic rerank) and Stage 3 (dynamic top-k), as pure functions over candidates."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")


@dataclass(frozen=True)
class RerankWeights:
    similarity: float = 0.7
    coverage: float = 0.25
    structure_bonus: float = 0.05


def keyword_coverage(query_terms: Sequence[str], content_tokens: str) -> float:
    """Share of the query's significant terms among a chunk's indexed tokens (0..1).

    content_tokens is what ingestion stored (segment() of title > headings + text), so query and
    chunk are compared through the same segmentation, without segmenting the chunk again.
    """
    if not query_terms:
        return 0.0
    tokens = set(content_tokens.split())
    return sum(1 for t in query_terms if t in tokens) / len(query_terms)


def starts_with_heading(content: str) -> bool:
    return bool(_HEADING.match(content))


def final_score(similarity: float, coverage: float, heading: bool, weights: RerankWeights) -> float:
    """final = similarity * 0.7 + keyword_coverage * 0.25 + structure_bonus (seed defaults)."""
    bonus = weights.structure_bonus if heading else 0.0
    return similarity * weights.similarity + coverage * weights.coverage + bonus


def dynamic_top_k(scores: Sequence[float], *, top_k_min: int, top_k_max: int, drop_ratio: float) -> int:
    """How many of the (descending) scores to keep: at least top_k_min, then while
    score >= best * drop_ratio, never more than top_k_max."""
    n = min(len(scores), top_k_max)
    if n == 0:
        return 0
    keep = min(top_k_min, n)
    threshold = scores[0] * drop_ratio
    while keep < n and scores[keep] >= threshold:
        keep += 1
    return keep
