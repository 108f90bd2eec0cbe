"""Assist mode: the model may search while it answers (seed evidence-retention.md 2.5, agent tools).

`search_local` runs the retrieval pipeline as the caller (RLS applies), `search_web` the configured web
search. What a call finds joins the turn's evidence pack after the numbers it already has, so the
model cites it as [n] like any source and the reply stores it in messages.sources; a chunk (or page
passage) found twice keeps its first number. Calls run in the worker thread that streams the answer;
the web leg is handed to the event loop, which is free while that thread works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from backend.auth.identity import Identity
from backend.chat.options import EvidenceOptions
from backend.config import Settings
from backend.errors import DomainError
from backend.llm.base import ToolSpec
from backend.llm.prompts import format_source
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchRequest, SearchResult
from backend.search.web import dedup_against_local, web_passages
from backend.web import WaitBudget, WebSearch, web_only

TOOL_TOP_K = 10  # the seed's svc.search(top_k=10)
MAX_RETURNED = 15  # chunks handed back to the model per call (seed: at most 15)
_QUERY = {"type": "string", "description": "a self-contained search query (name every entity, no pronouns)"}


class AssistTools:
    """The tools of one turn, and the evidence they found (`found`, numbered after the pack)."""

    def __init__(
        self,
        *,
        retrieval: RetrievalService,
        web: WebSearch,
        loop: asyncio.AbstractEventLoop,
        settings: Settings,
        identity: Identity,
        question: SearchResult,
        options: EvidenceOptions,
        pack: Sequence[ScoredChunk],
        offer_web: bool,
    ) -> None:
        self._retrieval, self._web, self._loop = retrieval, web, loop
        self._settings, self._identity, self._question, self._options = settings, identity, question, options
        self._number = {c.chunk_id: n for n, c in enumerate(pack, 1)}
        self._pack = list(pack)
        self.found: list[ScoredChunk] = []
        self.calls: list[dict[str, Any]] = []  # what was asked and what came back, for the diagnostics
        self.max_calls = settings.chat_assist_max_calls
        local = ToolSpec(
            "search_local",
            "Search the user's documents (the knowledge base) again, for facts the sources above lack.",
            {"type": "object", "properties": {"query": _QUERY}, "required": ["query"]},
        )
        online = ToolSpec(
            "search_web",
            "Search the web for facts that are not in the user's documents.",
            {"type": "object", "properties": {"query": _QUERY}, "required": ["query"]},
        )
        self._offer_web = offer_web and web.enabled
        self.specs: Sequence[ToolSpec] = [local, online] if self._offer_web else [local]

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        query = str(args.get("query", "")).strip()
        if not query:
            return "error: give a query"
        try:
            if name == "search_local":
                chunks = self._search_local(query)
            elif name == "search_web" and self._offer_web:
                chunks = self._search_web(query)
            else:
                return f"error: no tool named {name!r}"
        except (DomainError, TimeoutError) as exc:
            self.calls.append({"tool": name, "query": query, "error": str(exc)})
            return f"error: {exc}"
        numbered = [(self._cite(c), c) for c in chunks[:MAX_RETURNED]]
        self.calls.append({"tool": name, "query": query, "sources": [n for n, _ in numbered]})
        if not numbered:
            return "nothing found"
        # The same untrusted <source n="..."> blocks as the sources of the prompt.
        return "\n\n".join(format_source(n, c.title, _where(c), c.content) for n, c in numbered)

    def _search_local(self, query: str) -> list[ScoredChunk]:
        request = SearchRequest(
            query=query,
            top_k=TOOL_TOP_K,
            dynamic=False,
            mode=self._options.mode,
            filters=self._options.filters,
            collections=self._options.collections,
        )
        return self._retrieval.search(request, identity=self._identity).results

    def _search_web(self, query: str) -> list[ScoredChunk]:
        budget = WaitBudget.for_mode(self._settings)
        outcome = asyncio.run_coroutine_threadsafe(
            web_only(self._web.legs(query, caller=self._identity.cache_scope), budget), self._loop
        ).result()
        hits = dedup_against_local([*self._pack, *self.found], outcome.web, self._settings).kept
        embedder = self._retrieval.embedder
        return web_passages(hits, embedder, self._question.embedding, self._settings)[:TOOL_TOP_K]

    def _cite(self, chunk: ScoredChunk) -> int:
        if chunk.chunk_id not in self._number:
            self._number[chunk.chunk_id] = len(self._pack) + len(self.found) + 1
            self.found.append(chunk)
        return self._number[chunk.chunk_id]


def _where(chunk: ScoredChunk) -> str:
    return (chunk.url or "") if chunk.kind == "web" else chunk.heading
