"""The gap supplement: when the evidence is scarce (its trigger), and the self-contained searches for what
the evidence so far does not cover (its queries)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from backend.errors import ProviderError
from backend.llm import LLM, load_prompt
from backend.llm.parsing import content_lines
from backend.llm.prompts import neutralise
from backend.search.types import ScoredChunk
from backend.text import query_terms

_EVIDENCE_CHARS = 200

log = logging.getLogger(__name__)
GapMethod = Literal["llm", "keywords", "none"]


@dataclass(frozen=True)
class GapQueries:
    queries: list[str]
    method: GapMethod


def generate_gap_queries(
    question: str, evidence: Sequence[ScoredChunk], llm: LLM, max_queries: int
) -> GapQueries:
    """Up to max_queries searches for what is missing: asked of the LLM, else built from keywords."""
    lines = (f"- {c.title}: {c.content[:_EVIDENCE_CHARS]}" for c in evidence)
    summary = neutralise("\n".join(lines)) or "(nothing found)"  # inside the prompt's <evidence> block
    prompt = load_prompt("gap_queries").render(
        question=question, evidence_summary=summary, max_queries=str(max_queries)
    )
    try:
        completion = llm.complete("", prompt)
    except ProviderError as exc:
        log.warning("gap queries fell back to keywords: %s", exc)
        completion = None
    if completion is not None:
        queries = _parse(completion, question, max_queries)
        return GapQueries(queries, "llm" if queries else "none")
    queries = keyword_gap_queries(question, evidence, max_queries)
    return GapQueries(queries, "keywords" if queries else "none")


def keyword_gap_queries(question: str, evidence: Sequence[ScoredChunk], max_queries: int) -> list[str]:
    """Without an LLM: the terms no evidence contains, anchored on the question's leading terms,
    then the bare keyword form of the question (which the full-text leg matches term by term)."""
    terms = query_terms(question)
    if not terms:
        return []
    seen_tokens: set[str] = set()
    for chunk in evidence:
        seen_tokens.update(chunk.content_tokens.split())
    missing = [t for t in terms if t not in seen_tokens]
    anchor = [t for t in terms[:2] if t not in missing]
    candidates = []
    if missing:
        candidates.append(" ".join(anchor + missing))
        candidates.extend(" ".join(anchor + [t]) for t in missing[:2] if anchor)
    candidates.append(" ".join(terms))
    return _dedupe(candidates, question, max_queries)


def _parse(completion: str, question: str, max_queries: int) -> list[str]:
    lines = content_lines(completion)
    return _dedupe([line for line in lines if 2 <= len(line) <= 300], question, max_queries)


def _dedupe(candidates: Sequence[str], question: str, limit: int) -> list[str]:
    out: list[str] = []
    for query in candidates:
        if query and query != question and query not in out:
            out.append(query)
    return out[:limit]


def scarce(
    evidence: list[ScoredChunk],
    confidence: dict[str, Any],
    terms: list[str],
    term_stats: dict[str, tuple[int, float]],
    missing_share: float,
) -> str | None:
    """Why the evidence that would be written counts as scarce (the gap supplement's trigger), or None.

    Scarce: confidence is low; fewer than two relevant chunks; or the question's distinctive terms
    that the corpus has are missing from the evidence. Missing terms are weighed by idf, so a generic
    word (控制, "use") does not send three extra searches, and a term no chunk contains is ignored:
    a gap search cannot find what the corpus does not have.
    """
    if confidence.get("confidence_level") == "low":
        return "confidence low"
    if len(evidence) < 2:
        return f"{len(evidence)} relevant chunk(s)"
    missing = missing_terms(terms, evidence)
    findable = [t for t in missing if term_stats.get(t, (0, 0.0))[0] > 0]
    total = sum(term_stats.get(t, (0, 1.0))[1] for t in terms)
    share = sum(term_stats[t][1] for t in findable) / total if total > 0 else 0.0
    if findable and share >= missing_share:
        return f"terms not in the evidence: {', '.join(findable)} ({share:.0%} of the question's idf)"
    return None


def missing_terms(terms: list[str], chunks: list[ScoredChunk]) -> list[str]:
    """The question's significant terms that appear in none of the chunks (title, headings, text)."""
    tokens: set[str] = set()
    for chunk in chunks:
        tokens.update(chunk.content_tokens.split())
    return [t for t in terms if t not in tokens]
