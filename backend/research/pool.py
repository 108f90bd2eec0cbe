"""Per-section evidence pools (evidence-retention.md 三): items accumulate with their pool_source, are
ranked against the section's question, and are chosen for writing by gap-protected fusion (四)."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np

from backend.auth.identity import Identity
from backend.chat.fusion import fuse_pools_with_gap_protection
from backend.chat.relevance import relevance_gate
from backend.config import Settings
from backend.embeddings import Embedder
from backend.ingest.prepare import embedding_text
from backend.research.types import EvidenceItem, PoolSource, item_key
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchResult


class EvidenceIds:
    """Run-wide evidence ids: one per passage, whichever section found it first."""

    def __init__(self) -> None:
        self._ids: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def id_for(self, key: Hashable) -> int:
        with self._lock:
            return self._ids.setdefault(key, len(self._ids) + 1)


class SectionPool:
    """One section's evidence, in order of arrival; a passage found again keeps its first entry."""

    def __init__(self, ids: EvidenceIds) -> None:
        self._ids = ids
        self.items: dict[Hashable, EvidenceItem] = {}

    def add(
        self, chunks: Iterable[ScoredChunk], *, pool_source: PoolSource, round_no: int, query: str
    ) -> int:
        """Add what a search found (local chunks and web passages); returns how many were new here."""
        new = 0
        for chunk in chunks:
            key = item_key(chunk)
            source: PoolSource = "web" if chunk.kind == "web" else pool_source
            if key in self.items:
                self.items[key].sources.add(source)
                continue
            self.items[key] = EvidenceItem(self._ids.id_for(key), chunk, source, round_no, query, {source})
            new += 1
        return new

    def __len__(self) -> int:
        return len(self.items)

    def counts(self) -> dict[str, int]:
        """Items by the pool_source they entered with."""
        return dict(Counter(item.pool_source for item in self.items.values()))


class PoolRanker:
    """Scores pool items against a section's question (its anchor search), as one global rerank through
    RetrievalService.rescore. A web passage carries its cosine to the query that found it; here it gets
    its cosine to the section question instead (embedded once per passage).
    Blocking (database, embedder): call it in a worker thread."""

    def __init__(
        self,
        retrieval: RetrievalService,
        embedder: Embedder,
        settings: Settings,
        identity: Identity,
        anchor: SearchResult,
    ) -> None:
        self.retrieval = retrieval
        self.embedder = embedder
        self.settings = settings
        self.identity = identity
        self.anchor = anchor
        self.scored: dict[Hashable, ScoredChunk] = {}  # the latest score of each item, by key
        self._cosines: dict[int, float] = {}

    def rank(self, items: list[EvidenceItem]) -> list[EvidenceItem]:
        """Items best first, those below the relevance gate left out (they are not evidence)."""
        cosines = self._web_cosines(items)
        chunks = [
            dataclasses.replace(i.chunk, similarity=cosines[i.chunk.chunk_id])
            if i.chunk.chunk_id in cosines
            else i.chunk
            for i in items
        ]
        rescored = self.retrieval.rescore(self.anchor, chunks, identity=self.identity)
        for item, chunk in zip(items, rescored, strict=True):
            self.scored[item.key] = chunk
        order = sorted(range(len(items)), key=lambda k: -rescored[k].final_score)  # stable on ties
        gate = relevance_gate(self.anchor, self.settings)  # across languages too, as chat's
        return [items[k] for k in order if gate(rescored[k])]

    def _web_cosines(self, items: list[EvidenceItem]) -> dict[int, float]:
        """Cosine of each web passage to the section question (embedded once per passage)."""
        missing = [i for i in items if i.chunk.kind == "web" and i.chunk.chunk_id not in self._cosines]
        if missing and self.anchor.embedding is not None:
            # Embedded the way web_passages embeds them, so the cosine means what it means there.
            vectors = self.embedder.embed_documents(
                [embedding_text(i.chunk.title, [], i.chunk.content) for i in missing]
            )
            query = np.asarray(self.anchor.embedding, dtype=np.float64)
            for item, vector in zip(missing, vectors, strict=True):
                v = np.asarray(vector, dtype=np.float64)
                norm = float(np.linalg.norm(v) * np.linalg.norm(query)) or 1.0
                self._cosines[item.chunk.chunk_id] = float(v @ query) / norm
        return {
            i.chunk.chunk_id: self._cosines[i.chunk.chunk_id]
            for i in items
            if i.chunk.chunk_id in self._cosines
        }


def select_for_writing(
    pool: SectionPool,
    rank: Callable[[list[EvidenceItem]], list[EvidenceItem]],
    *,
    write_k: int,
    settings: Settings,
) -> tuple[list[EvidenceItem], dict[str, Any]]:
    """The evidence a section is written from: main and gap items reranked together against the
    section question, write_k kept, with ceil(write_k x RESEARCH_GAP_RATIO) of them reserved for
    what gap searches found (seed 七.3: otherwise the gap finds lose to the many first-round ones)."""
    items = list(pool.items.values())
    diag: dict[str, Any] = {}
    chosen = fuse_pools_with_gap_protection(
        [i for i in items if not i.is_gap],
        [i for i in items if i.is_gap],
        top_k=write_k,
        gap_ratio=settings.research_gap_ratio,
        rank_pool_multiplier=settings.research_rank_pool_multiplier,
        rerank=rank,
        key=lambda i: i.key,
        diag=diag,
    )
    return chosen, diag.get("pool_fusion", {})
