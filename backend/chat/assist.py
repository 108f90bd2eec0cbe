"""Assist mode: the model may search while it answers (seed evidence-retention.md 2.5, agent tools).

`search_local` runs the retrieval pipeline as the caller (RLS applies), `search_web` the configured web
search, `search_scholar` / `search_ncbi` Semantic Scholar's paper search / PubMed (offered only when
that engine is among WEB_SEARCH_PROVIDERS, and the turn may go to the web). Malformed arguments get a
message the model reads, never an exception. What a call finds joins the turn's evidence pack after
the numbers it already has, so the model cites it as [n] like any source and the reply stores it in
messages.sources; a chunk (or page passage) found twice keeps its first number. Calls run in the
worker thread that streams the answer; the web leg is handed to the event loop, which is free while
that thread works.
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
_ARGS = {"type": "object", "properties": {"query": _QUERY}, "required": ["query"]}
BAD_ARGUMENTS = 'error: the arguments must be a JSON object {"query": "<a self-contained search query>"}'
# The academic tools and the engine each searches (backend/web/academic.py), offered when configured.
ACADEMIC_TOOLS: dict[str, tuple[str, str]] = {
    "search_scholar": (
        "semantic_scholar",
        "Search scholarly papers (Semantic Scholar: titles and abstracts) for a research or academic "
        "question; queries in English work best.",
    ),
    "search_ncbi": (
        "ncbi",
        "Search biomedical literature (PubMed via NCBI: titles and abstracts) for a medical, clinical "
        "or life-science question; queries in English work best.",
    ),
}


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
            _ARGS,
        )
        online = ToolSpec(
            "search_web", "Search the web for facts that are not in the user's documents.", _ARGS
        )
        self._offer_web = offer_web and web.enabled
        # An academic tool searches exactly its engine, and only one WEB_SEARCH_PROVIDERS configures.
        self._academic = {
            tool: engine
            for tool, (engine, _) in ACADEMIC_TOOLS.items()
            if self._offer_web and engine in web.names
        }
        academic = [ToolSpec(tool, ACADEMIC_TOOLS[tool][1], _ARGS) for tool in self._academic]
        self.specs: Sequence[ToolSpec] = [local, online, *academic] if self._offer_web else [local]

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        if name not in {s.name for s in self.specs}:
            return f"error: no tool named {name!r}"
        raw = args.get("query") if isinstance(args, Mapping) else None
        query = raw.strip() if isinstance(raw, str) else ""
        if not query:
            self.calls.append({"tool": name, "query": "", "error": "malformed arguments (no query string)"})
            return BAD_ARGUMENTS
        try:
            if name == "search_local":
                chunks = self._search_local(query)
            elif name == "search_web":
                chunks = self._search_web(query)
            else:
                chunks = self._search_web(query, engine=self._academic[name])
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

    def _search_web(self, query: str, *, engine: str | None = None) -> list[ScoredChunk]:
        """The web search as routed, or exactly `engine` (an academic tool's)."""
        budget = WaitBudget.for_mode(self._settings)
        engines = None if engine is None else (engine,)
        legs = self._web.legs(query, caller=self._identity.cache_scope, engines=engines)
        outcome = asyncio.run_coroutine_threadsafe(web_only(legs, budget), self._loop).result()
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
