"""Context building: numbered, de-duplicated sources within a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from backend.llm.base import SourceText
from backend.services.retrieval import ScoredChunk
from backend.text.tokens import estimate_tokens, truncate_to_tokens

# Per-source overhead of the "[n] title > heading" line and separators.
_SOURCE_OVERHEAD_TOKENS = 12


@dataclass
class BuiltContext:
    sources: list[SourceText]
    chunks: list[ScoredChunk]  # chunks[i] is cited as [i + 1]
    used_tokens: int
    dropped_duplicates: int
    truncated: int
    dropped_for_budget: int


def build_context(chunks: Sequence[ScoredChunk], max_tokens: int) -> BuiltContext:
    """Number the chunks [1..n] in rank order, skipping duplicates, until the budget is spent."""
    sources: list[SourceText] = []
    kept: list[ScoredChunk] = []
    seen: set[str] = set()
    used = duplicates = truncated = dropped = 0
    for chunk in chunks:
        if chunk.content_hash in seen:
            duplicates += 1
            continue
        remaining = max_tokens - used - _SOURCE_OVERHEAD_TOKENS
        if remaining < 50:
            dropped += 1
            continue
        content = chunk.content
        cost = estimate_tokens(content)
        if cost > remaining:
            content = truncate_to_tokens(content, remaining)
            cost = estimate_tokens(content)
            truncated += 1
        seen.add(chunk.content_hash)
        kept.append(chunk)
        sources.append(SourceText(n=len(kept), title=chunk.title, heading=chunk.heading, content=content))
        used += cost + _SOURCE_OVERHEAD_TOKENS
    return BuiltContext(sources, kept, used, duplicates, truncated, dropped)
