"""POST /search: the three-stage retrieval pipeline, with diagnostics."""

from __future__ import annotations

from fastapi import APIRouter

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.schemas import SearchHit, SearchIn, SearchOut
from backend.services.retrieval import SearchRequest, log_search_done

router = APIRouter(prefix="/search", tags=["search"])


@router.post("", response_model=SearchOut, summary="Hybrid prefetch -> rerank -> dynamic top-k")
def search(body: SearchIn, services: ServicesDep, user: CurrentUser) -> SearchOut:
    result = services.retrieval.search(
        SearchRequest(
            query=body.query, top_k=body.top_k, mode=body.mode, dynamic=body.dynamic, filters=body.filters
        ),
        identity=user,
    )
    hits = [
        SearchHit(
            chunk_id=c.chunk_id,
            document_id=c.document_id,
            external_id=c.external_id,
            title=c.title,
            heading=c.heading,
            content=c.content,
            metadata=c.metadata,
            scores=c.why(),
        )
        for c in result.results
    ]
    log_search_done(result)
    return SearchOut(query=result.query, mode=result.mode, results=hits, diagnostics=result.diagnostics)
