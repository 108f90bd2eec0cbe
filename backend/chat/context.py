"""Context building: numbered, de-duplicated sources within a real token budget (docs/context-budget.md).

CONTEXT_MAX_TOKENS is what one answer may use in all. The reply keeps CONTEXT_REPLY_TOKENS; the
instructions, the conversation history and the question are counted as the generator sends them; the
sources get the rest, best first. Before anything is counted, a source that repeats a better one is
dropped: the same text (hash), or a near duplicate - MinHash over character trigrams for Chinese (word
trigrams for English), the web leg's fingerprint - whose similarity or containment reaches
CONTEXT_NEAR_DUPLICATE_THRESHOLD, e.g. the same paragraph in two versions of a document.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from backend.chat.diagnostics import ContextDiagnostics, ContextDropOut, DropReason
from backend.config import Settings
from backend.llm import Turn, load_prompt
from backend.llm.base import SourceText
from backend.llm.prompts import format_source
from backend.llm.token_count import TokenCounter
from backend.search.types import ScoredChunk
from backend.telemetry import Metrics
from backend.text.tokens import estimate_tokens, truncate_to_tokens
from backend.web.dedup import Fingerprint

# The <source n="..."> block around a source's label and content, and the blank line between sources.
SOURCE_FRAMING_TOKENS = estimate_tokens(format_source(100, "", "", "") + "\n\n")
MIN_SOURCE_TOKENS = 50  # a source cut shorter than this says too little to be worth a number
FIRST_SOURCE_FLOOR = 200  # the best source is never cut below this, even past the budget


@dataclass
class BuiltContext:
    sources: list[SourceText]
    chunks: list[ScoredChunk]  # chunks[i] is cited as [i + 1]
    used_tokens: int  # the sources' tokens
    dropped_duplicates: int
    truncated: int
    dropped_for_budget: int
    dropped_near_duplicates: int = 0
    prompt_tokens: int = 0  # instructions, history and question
    available_tokens: int = 0  # what was left for the sources
    counter: str = "estimate"
    counted: dict[str, int] = field(default_factory=dict)  # api / cache / estimate
    counter_error: str | None = None
    dropped: list[ContextDropOut] = field(default_factory=list)
    ms: float = 0.0

    def report(self, settings: Settings, *, shown: int, extra: int) -> ContextDiagnostics:
        """What the context held and left out: `shown` sources in the model's context (0 for a reply
        that needs no model), `extra` numbered after them, and the budget they were fitted in."""
        built = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("sources", "chunks")}
        return ContextDiagnostics.model_validate(
            {
                **built,
                "sources": shown,
                "extra_sources": extra,
                "budget_tokens": settings.context_max_tokens,
                "reply_reserve_tokens": settings.context_reply_tokens,
            }
        )


class ContextBuilder:
    """Builds the numbered sources of one answer within the token budget."""

    def __init__(self, settings: Settings, counter: TokenCounter, metrics: Metrics) -> None:
        self.settings = settings
        self.counter = counter
        self.metrics = metrics

    def build(
        self,
        chunks: Sequence[ScoredChunk],
        *,
        scope: uuid.UUID,
        question: str = "",
        history: Sequence[Turn] = (),
    ) -> BuiltContext:
        """Number the chunks [1..n] in rank order, skipping duplicates, until the budget is spent.
        `scope` (Identity.cache_scope): whose cached token counts may be used."""
        started = time.perf_counter()
        s = self.settings
        unique, dropped = self._deduplicated(chunks)
        texts = [_source_text(c) for c in unique]
        prompt = self._prompt_texts(question, history)
        counts = self.counter.count([*prompt, *texts], scope=scope)
        prompt_tokens = sum(counts.tokens[: len(prompt)])
        costs = [t + SOURCE_FRAMING_TOKENS for t in counts.tokens[len(prompt) :]]
        available = s.context_max_tokens - s.context_reply_tokens - prompt_tokens
        built = BuiltContext(
            [],
            [],
            0,
            dropped_duplicates=sum(d.reason == "duplicate" for d in dropped),
            truncated=0,
            dropped_for_budget=0,
            dropped_near_duplicates=sum(d.reason == "near_duplicate" for d in dropped),
            prompt_tokens=prompt_tokens,
            available_tokens=available,
            counter=self.counter.name if counts.methods["estimate"] < len(counts.tokens) else "estimate",
            counted=counts.methods,
            counter_error=counts.error,
            dropped=dropped,
        )
        for chunk, text, cost in zip(unique, texts, costs, strict=True):
            self._place(built, chunk, text, cost)
        built.ms = round((time.perf_counter() - started) * 1000, 3)
        self.metrics.observe_stage("context", built.ms / 1000)
        return built

    def _place(self, built: BuiltContext, chunk: ScoredChunk, text: str, cost: int) -> None:
        remaining = built.available_tokens - built.used_tokens
        if not built.chunks:
            remaining = max(remaining, FIRST_SOURCE_FLOOR)  # an answer always gets its best evidence
        content = chunk.content
        if cost > remaining:
            if remaining < MIN_SOURCE_TOKENS + SOURCE_FRAMING_TOKENS:
                built.dropped_for_budget += 1
                built.dropped.append(_drop(chunk, "budget", cost))
                return
            # The estimate, scaled by what the whole source really costs, decides where to cut.
            scale = (cost - SOURCE_FRAMING_TOKENS) / max(1, estimate_tokens(text))
            label = estimate_tokens(text[: len(text) - len(chunk.content.strip())]) * scale
            room = remaining - SOURCE_FRAMING_TOKENS - label
            content = truncate_to_tokens(chunk.content, max(1, math.floor(room)), scale=scale)
            cost = SOURCE_FRAMING_TOKENS + math.ceil(label + estimate_tokens(content) * scale)
            built.truncated += 1
        built.chunks.append(chunk)
        source = SourceText(n=len(built.chunks), title=chunk.title, heading=chunk.heading, content=content)
        built.sources.append(source)
        built.used_tokens += cost

    def _deduplicated(self, chunks: Sequence[ScoredChunk]) -> tuple[list[ScoredChunk], list[ContextDropOut]]:
        threshold = self.settings.context_near_duplicate_threshold
        kept: list[tuple[ScoredChunk, Fingerprint]] = []
        hashes: dict[str, ScoredChunk] = {}
        dropped: list[ContextDropOut] = []
        for chunk in chunks:
            if chunk.content_hash in hashes:
                dropped.append(_drop(chunk, "duplicate", None, hashes[chunk.content_hash]))
                continue
            printed = Fingerprint.of(chunk.content)
            twin = next(
                ((c, sim) for c, p in kept if (sim := printed.near_duplicate_of(p, threshold)) is not None),
                None,
            )
            if twin is not None:
                dropped.append(_drop(chunk, "near_duplicate", None, twin[0], twin[1]))
                continue
            hashes[chunk.content_hash] = chunk
            kept.append((chunk, printed))
        return [c for c, _ in kept], dropped

    @staticmethod
    def _prompt_texts(question: str, history: Sequence[Turn]) -> list[str]:
        """What the generator sends besides the sources (backend/llm/gemini.py builds the same)."""
        system = load_prompt("answer_system").render()
        user = load_prompt("answer_user").render(question=question, sources="")
        return [system, user, *(t.content for t in history if t.content.strip())]


def _source_text(chunk: ScoredChunk) -> str:
    """A source as format_sources writes it, without its block: the label line, then the content."""
    label = " > ".join(p for p in (chunk.title.strip(), chunk.heading.strip()) if p)
    return f"{label}\n{chunk.content.strip()}"


def _drop(
    chunk: ScoredChunk,
    reason: DropReason,
    tokens: int | None,
    twin: ScoredChunk | None = None,
    similarity: float | None = None,
) -> ContextDropOut:
    return ContextDropOut(
        chunk_id=chunk.chunk_id,
        title=chunk.title,
        reason=reason,
        tokens=tokens,
        duplicate_of=twin.chunk_id if twin is not None else None,
        similarity=round(similarity, 3) if similarity is not None else None,
    )
