"""POST /search: the three-stage retrieval pipeline, with diagnostics (and the web, when asked)."""

from __future__ import annotations

from fastapi import APIRouter

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.limits import SearchLimit
from backend.api.schemas import SearchHit, SearchIn, SearchOut, WebHitOut
from backend.ingest.provenance import PROVENANCE_KEY, source_provenance
from backend.search.types import SearchRequest
from backend.search.web import search_with_web

router = APIRouter(prefix="/search", tags=["search"])


@router.post("", response_model=SearchOut, summary="Hybrid prefetch -> rerank -> dynamic top-k")
async def search(body: SearchIn, services: ServicesDep, user: CurrentUser, _: SearchLimit) -> SearchOut:
    request = SearchRequest(
        query=body.query,
        top_k=body.top_k,
        mode=body.mode,
        dynamic=body.dynamic,
        filters=body.filters,
        infer_filters=body.infer_filters,
        relax=body.relax,
        min_score=body.min_score,
        reranker=body.reranker,
        collections=body.collections,
    )
    beyond = await search_with_web(services.retrieval, services.web, request, body.web, identity=user)
    result = beyond.search
    hits = [
        SearchHit(
            chunk_id=c.chunk_id,
            document_id=c.document_id,
            external_id=c.external_id,
            title=c.title,
            heading=c.heading,
            content=c.content,
            metadata={k: v for k, v in c.metadata.items() if k != PROVENANCE_KEY},
            provenance=source_provenance(c.metadata),
            score=c.score,
            scores=c.why(),
        )
        for c in result.results
    ]
    return SearchOut(
        query=result.query,
        mode=result.mode,
        results=hits,
        route=beyond.route,
        web=[WebHitOut.from_result(h) for h in beyond.hits],
        applied_where=result.diagnostics.where.applied_where if result.diagnostics.where else {},
        matched_count=result.diagnostics.matched_count,
        diagnostics=result.diagnostics,
        web_diagnostics=beyond.web,
    )
