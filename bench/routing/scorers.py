"""The confidence of a stored search under any shipped policy, through backend.confidence.assess."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from backend.confidence.assess import ScorePolicy, assess, load_score_policy
from bench.routing.records import QuestionRecord


@lru_cache(maxsize=16)
def policy(version: str) -> ScorePolicy:
    return load_score_policy(version)


def confidence_under(
    version: str, record: QuestionRecord, depth: str, chunk_totals: Mapping[str, int]
) -> dict[str, Any]:
    """What the search would return with SCORE_POLICY_VERSION=version: the seed formula reads the
    chunk totals, answerability the query terms' idfs (what the services must pass, see assess)."""
    return assess(
        record.searches[depth].candidates,
        policy(version),
        terms=record.terms,
        term_idfs=record.term_idfs,
        chunk_totals=chunk_totals,
        question=record.text,
    )
