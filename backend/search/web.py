"""Web hits as evidence: split into passages, embedded and scored against the question like chunks, so
they rank, fuse and get cited [n] with the local evidence (issue 13, seed evidence-retention.md).

A hit's text is its page when it was read in full, else the provider's snippet. Passages are cut by
the ingestion chunker and embedded with the corpus's embedder in the shape local chunks are embedded
("title" then the text), so a cosine to the question means the same for both. Hits that repeat local
evidence are dropped first (cross_source_dedup: the local one wins).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from backend.auth.identity import Identity
from backend.confidence.routing import Route, route_for
from backend.config import Settings
from backend.db.deadline import within
from backend.embeddings import Embedder
from backend.errors import LocalSearchTimeout
from backend.ingest.chunking import chunk_text
from backend.ingest.prepare import embedding_text, sha256
from backend.search.diagnostics import WebDiagnostics
from backend.search.observe import observe_search
from backend.search.report import log_search_done
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchRequest, SearchResult
from backend.text import clean_document_text, index_tokens
from backend.web import (
    DedupResult,
    LocalText,
    SoftWaitOutcome,
    WaitBudget,
    WebLeg,
    WebResult,
    WebSearch,
    cross_source_dedup,
    soft_wait,
    web_only,
)
from backend.web.softwait import Mode as WaitMode

MAX_PASSAGES_PER_HIT = 3  # a page read in full is long; its first passages are the article's lead
WebChoice = bool | Literal["auto"]


@dataclass
class Beyond:
    """A search and, when the request and its confidence called for it, what the web added."""

    search: SearchResult
    route: Route
    hits: list[WebResult]  # deduplicated against the search's chunks
    web: WebDiagnostics | None  # None: no web leg ran


async def search_beyond(
    local: Callable[[], SearchResult],
    query: str,
    web: WebSearch,
    settings: Settings,
    choice: WebChoice,
    mode: WaitMode = "chat",
    *,
    caller: uuid.UUID,
    unsearched: Callable[[], SearchResult] | None = None,
    engine: str | None = None,
) -> Beyond:
    """The local search (blocking: run in a thread) and, per `choice`, the web: True starts it beside the
    local search under the soft deadline; auto only when the confidence routes to web_fallback (so a
    question the documents answer costs no provider call); False never. Deep research (`mode`) waits
    longer for the web than a chat turn (WaitBudget.for_mode). `caller` (Identity.cache_scope): whose
    web cache entries the legs may use.

    Beside a web leg (True, auto) the local search has a hard limit, WEB_LOCAL_TIMEOUT_S. Past it the
    answer comes from the web: route web_fallback on `unsearched()` (the query's search without the
    documents: no candidates) and the web's hits, the diagnostics saying the local search timed out.
    Without `unsearched`, or when the web found nothing, it is a 504 (LocalSearchTimeout).

    The query goes to the engines backend/web/routing.py picks for it; `engine` (a research section's
    engine from its plan) overrides the rule when that engine is configured."""
    use_web = web.enabled and choice is not False
    engines = web.route(query, prefer=engine).engines if engine else None

    def legs() -> list[WebLeg]:
        return web.legs(query, caller=caller, engines=engines)

    budget = WaitBudget.for_mode(settings, mode)
    # Past its limit nobody waits for the search: the database cancels its statement then too.
    bounded = within(local, settings.web_local_timeout_s)
    outcome: SoftWaitOutcome[SearchResult] | SoftWaitOutcome[None] | None = None
    if use_web and choice is True:
        outcome = await soft_wait(asyncio.to_thread(bounded), legs(), budget)
        if outcome.local is None:
            return await _from_the_web(outcome, unsearched, settings, choice)
        search = outcome.local
    elif use_web:  # auto: the web may follow, so the local search has the same hard limit
        try:
            search = await asyncio.wait_for(asyncio.to_thread(bounded), settings.web_local_timeout_s)
        except TimeoutError:
            late = await web_only(legs(), budget) if unsearched else None
            if late is not None:
                late.diagnostics.local_timeout = True
            return await _from_the_web(late, unsearched, settings, choice)
    else:
        search = await asyncio.to_thread(local)
    route = route_for(search.confidence, settings, web_available=use_web)
    if outcome is None and route == "web_fallback":
        outcome = await web_only(legs(), budget)
    if outcome is None:
        return Beyond(search, route, [], None)
    return _with_hits(search, route, outcome, choice, settings)


async def web_after(
    search: SearchResult, query: str, web: WebSearch, settings: Settings, *, caller: uuid.UUID
) -> Beyond | None:
    """The web after the documents' evidence was read and found not to answer (the model declined it,
    backend/chat/verdict.py): route web_fallback on the same search and the web's hits, deduplicated
    against it; None when no web provider is configured."""
    if not web.enabled:
        return None
    outcome = await web_only(web.legs(query, caller=caller), WaitBudget.for_mode(settings, "chat"))
    return _with_hits(search, "web_fallback", outcome, "auto", settings)


def _with_hits(
    search: SearchResult,
    route: Route,
    outcome: SoftWaitOutcome[SearchResult] | SoftWaitOutcome[None],
    choice: WebChoice,
    settings: Settings,
) -> Beyond:
    """The search and the web's hits, deduplicated against its candidates (the local one wins)."""
    kept = dedup_against_local(search.candidates, outcome.web, settings)
    return Beyond(search, route, kept.kept, WebDiagnostics.from_outcome(choice, outcome, kept.counts, 0))


async def _from_the_web(
    outcome: SoftWaitOutcome[SearchResult] | SoftWaitOutcome[None] | None,
    unsearched: Callable[[], SearchResult] | None,
    settings: Settings,
    choice: WebChoice,
) -> Beyond:
    """The web's answer to a question whose local search ran out of time, or the 504 that says so."""
    if unsearched is None or outcome is None or not outcome.web:
        raise _local_timeout(settings, web_found_nothing=outcome is not None)
    search = await asyncio.to_thread(unsearched)
    kept = dedup_against_local([], outcome.web, settings)
    diagnostics = WebDiagnostics.from_outcome(choice, outcome, kept.counts, 0)
    return Beyond(search, "web_fallback", kept.kept, diagnostics)


def _local_timeout(settings: Settings, *, web_found_nothing: bool = False) -> LocalSearchTimeout:
    limit = settings.web_local_timeout_s
    web = " and the web search found nothing" if web_found_nothing else ""
    return LocalSearchTimeout(
        f"the search of your documents took longer than WEB_LOCAL_TIMEOUT_S ({limit:g} s){web}; "
        "try again, or narrow the question (filters)"
    )


async def search_with_web(
    retrieval: RetrievalService,
    web: WebSearch,
    request: SearchRequest,
    choice: WebChoice,
    *,
    identity: Identity,
) -> Beyond:
    """One /search: the search as `identity` and, per `choice`, the web beside or after it; its log
    line and its metrics."""
    beyond = await search_beyond(
        lambda: retrieval.search(request, identity=identity),
        request.query,
        web,
        retrieval.settings,
        choice,
        caller=identity.cache_scope,
        unsearched=lambda: retrieval.unsearched(request, identity=identity),
    )
    log_search_done(beyond.search)
    observe_search(retrieval.metrics, beyond.search, beyond.web)
    return beyond


def dedup_against_local(
    local: Sequence[ScoredChunk], web: Sequence[WebResult], settings: Settings
) -> DedupResult[WebResult]:
    """Web hits that add something: not a local chunk again, not a copy of a better web hit."""
    texts = [LocalText(str(c.chunk_id), c.content, c.url) for c in local]
    return cross_source_dedup(texts, list(web), threshold=settings.web_near_duplicate_threshold)


def web_passages(
    hits: Sequence[WebResult], embedder: Embedder, question_embedding: np.ndarray | None, settings: Settings
) -> list[ScoredChunk]:
    """Each hit's first passages as unscored evidence items with their cosine to the question.

    Blocking (the embedder): call it in a worker thread.
    """
    items: list[ScoredChunk] = []
    texts: list[str] = []
    for hit in hits:
        body = clean_document_text(hit.text)
        if not body:
            continue
        pieces = chunk_text(
            body, content_type="text/plain", size=settings.chunk_size, overlap=settings.chunk_overlap
        )
        for position, piece in enumerate(pieces[:MAX_PASSAGES_PER_HIT]):
            embedded = embedding_text(hit.title, [], piece.content)
            items.append(_passage(hit, position, piece.content, embedded))
            texts.append(embedded)
    if items and question_embedding is not None:
        vectors = embedder.embed_documents(texts)
        for item, vector in zip(items, vectors, strict=True):
            item.similarity = float(np.dot(vector, question_embedding))
    return items


def _passage(hit: WebResult, position: int, content: str, embedded: str) -> ScoredChunk:
    canonical = hit.canonical_url
    digest = hashlib.sha256(f"{canonical}#{position}".encode()).digest()
    return ScoredChunk(
        # Negative: never a chunks row; stable for one page passage, so fusion sees duplicates once.
        chunk_id=-(int.from_bytes(digest[:7], "big") + 1),
        document_id=uuid.uuid5(uuid.NAMESPACE_URL, canonical),
        external_id=canonical,
        title=hit.title or canonical,
        heading_path=[],
        position=position,
        content=content,
        content_hash=sha256(content),
        metadata={"provider": hit.provider, "published_date": hit.published_date},
        content_tokens=index_tokens(embedded),
        vector_rank=None,
        full_text_rank=None,
        rrf_score=None,
        similarity=None,
        kind="web",
        url=hit.url,
        provider=hit.provider,
        fetched_at=hit.fetched_at,
    )
