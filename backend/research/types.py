"""What a research run works with: the request, the plan and evidence items."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.auth.identity import Identity
from backend.llm import Turn
from backend.research.presets import Preset, PresetName, RunLimits
from backend.search.types import ScoredChunk
from backend.search.web import WebChoice

PlanMethod = Literal["llm", "heuristic"]
Priority = Literal["high", "medium", "low"]
PRIORITIES: tuple[Priority, ...] = ("high", "medium", "low")
# A sub-question's status (seed SubQuestion.status): pending until researched, then done; pruned when
# the global verify gave its direction up (recorded with the reason, never planned again).
SubQuestionStatus = Literal["pending", "done", "pruned"]
# Where an evidence item entered its section's pool (evidence-retention.md 3.1). eval_supplement is
# the gap pool the write step protects with a quota (seed 七.3); web items are main-pool evidence.
PoolSource = Literal["research_round", "eval_supplement", "write_stage", "web"]
GAP_POOL_SOURCES: frozenset[str] = frozenset({"eval_supplement"})

# One progress event of a run: {"type": "plan" | "section_started" | ..., **data}.
Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ResearchRequest:
    question: str
    conversation_id: uuid.UUID | None = None
    preset: PresetName | None = None  # None: RESEARCH_DEFAULT_PRESET
    # As on /chat: auto searches the web for a query the documents do not answer, True beside every
    # search, False never (backend/search/web.search_beyond; needs WEB_SEARCH_PROVIDER).
    web: WebChoice = "auto"
    filters: dict[str, Any] | None = None
    collections: list[uuid.UUID] | None = None  # every search narrowed to these collections; None: all
    step_top_k: int | None = None
    write_top_k: int | None = None


@dataclass(frozen=True)
class SectionPlan:
    title: str
    question: str  # self-contained: searched and written on its own
    queries: list[str]  # the first round's searches, the section question first
    # The web engine its searches go to (backend/web/routing.py names; seed: one engine per
    # sub-question) and why: the model's choice, or the routing rule's.
    engine: str | None = None
    engine_reason: str | None = None
    priority: Priority = "high"  # what the question asks: high; a gap the global verify found: medium
    loop: int = 0  # 0: the first plan; n: sent back by the n-th global verify (only the chain's gaps)
    # A multi-hop step: it needs the answer of section `after`, named in `question` by the words
    # `bridge` ("该地区", "that person"), replaced by that answer before it is searched (bridge.py).
    after: int | None = None
    bridge: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "question": self.question,
            "queries": list(self.queries),
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "priority": self.priority,
            "loop": self.loop,
            "after": self.after,
            "bridge": self.bridge,
        }


@dataclass(frozen=True)
class Plan:
    sections: list[SectionPlan]
    method: PlanMethod
    fallback_reason: str | None = None  # why the model's plan was not used


@dataclass
class EvidenceItem:
    """One passage in a section's pool. `id` is run-wide: the number a section writer cites, and the
    same passage found by two sections is one source of the report."""

    id: int
    chunk: ScoredChunk  # a local chunk, or a web passage (kind "web", chunk_id < 0: web_evidence.py)
    pool_source: PoolSource  # where it first entered the pool
    round: int
    query: str
    sources: set[str] = field(default_factory=set)  # every pool_source that found it

    @property
    def key(self) -> Hashable:
        return item_key(self.chunk)

    @property
    def is_gap(self) -> bool:
        """Only gap searches found it: it competes for the gap quota when the section is written."""
        return self.sources <= GAP_POOL_SOURCES


def item_key(chunk: ScoredChunk) -> Hashable:
    """A chunk's id; a web passage's id is a stable hash of its page and position (negative)."""
    return chunk.chunk_id


@dataclass(frozen=True)
class PreparedRun:
    """A validated request with its run row created; nothing has been searched yet."""

    run_id: uuid.UUID
    identity: Identity
    question: str  # as the user wrote it (stored, shown)
    query: str  # normalised: what research starts from
    conversation_id: uuid.UUID | None
    history: list[Turn]
    preset: Preset
    limits: RunLimits
    step_k: int
    write_k: int
    filters: dict[str, Any] | None
    web: WebChoice
    collections: list[uuid.UUID] | None = None
