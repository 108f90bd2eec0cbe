"""One score in [0, 1] per result, whatever the mode or reranker (seed 004, retrieval.scoring).

Vector stores return distances or similarities with different meanings and ranges; the API shows one
number whose meaning does not change with the search mode, the rerank policy or the query:

    score = how close in meaning the chunk is to the question, mapped from the index's metric to [0, 1]

Our chunks are indexed with `vector_cosine_ops` and the SQL functions return the cosine similarity
(`1 - (embedding <=> query)`), so score = (1 + cosine) / 2: 1 is the same direction, 0.5 unrelated
(orthogonal), 0 opposite. The ranking (rerank_score / final_score) also weighs keyword evidence and is
relative to the query's other candidates; the score is absolute, so one `min_score` threshold means
the same on every query (docs/scores.md).
"""

from __future__ import annotations

import math
from typing import Literal

Metric = Literal["cosine_distance", "cosine_similarity", "inner_product", "negative_inner_product", "l2"]

# What public.hybrid_search / public.match_documents return in their `similarity` column
# (sql/*.sql: 1 - (embedding <=> query), the chunks' HNSW indexes use vector_cosine_ops).
INDEX_METRIC: Metric = "cosine_similarity"
SCORE_MEANING = (
    "(1 + cosine similarity of question and chunk) / 2: 1 same meaning, 0.5 unrelated, 0 opposite; "
    "independent of the mode, the reranker and the other results (docs/scores.md)"
)


def score_from_distance(value: float, metric: Metric, *, alpha: float = 1.0, normalize: bool = True) -> float:
    """A store's distance or similarity as a score where higher is closer, in [0, 1] when `normalize`.

    cosine_distance        d = 1 - cos in [0, 2]        -> 1 - d / 2
    cosine_similarity      s = cos in [-1, 1]           -> (1 + s) / 2
    inner_product          ip (pgvector: -(a <#> b))    -> (1 + ip) / 2
    negative_inner_product pgvector's <#>, i.e. -ip     -> (1 - v) / 2
    l2                     d >= 0 (pgvector <->)        -> exp(-alpha * d)

    The inner-product mappings equal the cosine ones for unit vectors (both embedders here normalise),
    so a threshold keeps its meaning if an index moves from cosine to inner product; unnormalised
    vectors leave [0, 1] and are clamped. alpha sets how fast an L2 score decays with distance.
    """
    if not math.isfinite(value):
        raise ValueError(f"a {metric} value must be a finite number, got {value!r}")
    if metric == "cosine_distance":
        score = 1.0 - value / 2.0
    elif metric in ("cosine_similarity", "inner_product"):
        score = (1.0 + value) / 2.0
    elif metric == "negative_inner_product":
        score = (1.0 - value) / 2.0
    elif metric == "l2":
        if value < 0:
            raise ValueError(f"an L2 distance cannot be negative, got {value!r}")
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha!r}")
        score = math.exp(-alpha * value)
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return min(max(score, 0.0), 1.0) if normalize else score


def chunk_score(similarity: float | None) -> float | None:
    """The API's `score` of a chunk from the `similarity` the SQL functions return; None without one."""
    if similarity is None:
        return None
    return round(score_from_distance(similarity, INDEX_METRIC), 6)
