"""The FastAPI application."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware

from backend import __version__
from backend.api import mcp as mcp_http
from backend.api.errors import ERROR_RESPONSES, install_error_handlers
from backend.api.limits import RateLimiter
from backend.api.mcp import McpHttp
from backend.api.middleware import BodySizeLimit, RequestId
from backend.api.page import install_page
from backend.api.request_context import REQUEST_ID_HEADER
from backend.api.routes import (
    api_keys,
    chat,
    client,
    collections,
    conversations,
    documents,
    ingest_jobs,
    metrics,
    openai,
    research,
    search,
)
from backend.api.text_hygiene import refuse_unstorable_text
from backend.composition import Services, build_services
from backend.config import Settings, get_settings
from backend.embeddings.query_cache import warm_up
from backend.telemetry import RequestMetrics

DESCRIPTION = """
Postgres-native RAG: documents are chunked, segmented with jieba and embedded into PostgreSQL +
pgvector; `hybrid_search` (full-text OR + HNSW, fused by RRF in SQL) prefetches, a heuristic reranker
and a dynamic top-k cut choose the evidence, and answers cite it as `[n]`. `/research` plans a
compound question into sections, researches them in parallel and writes a cited report (streamed as
SSE). Every assistant message stores its sources, so a client can redraw citations later.
"""


# The routers, in the order the OpenAPI schema lists them.
ROUTES = (
    documents,
    collections,
    ingest_jobs,
    search,
    chat,
    research,
    conversations,
    api_keys,
    openai,
    client,
)


def create_app(services: Services | None = None, settings: Settings | None = None) -> FastAPI:
    """The app; tests pass ready services, the server builds them from settings at start-up."""

    resolved = settings or (services.settings if services else get_settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = services is None
        # Starting the embedded server, migrating and opening the pool block for seconds: a thread,
        # so the event loop stays free (and a slow database never freezes other apps in the process).
        if owned:
            app.state.services = await asyncio.to_thread(build_services, resolved)
        # Announces the auth mode, fetches the signing keys (a failure is logged; requests retry).
        await asyncio.to_thread(app.state.services.authenticator.prepare)
        if resolved.embedding_warm_up:  # the first search must not pay for loading the local model
            await asyncio.to_thread(warm_up, app.state.services.embedder, app.state.services.metrics)
        # On a Citus cluster: the erasures of other users' copies a crash interrupted (none on one node).
        await asyncio.to_thread(app.state.services.finish_interrupted_erasures)
        workers = app.state.services.start_workers()  # background ingestion (INGEST_WORKERS)
        try:
            async with app.state.mcp.run():  # the MCP server's session manager (/mcp)
                yield
        finally:
            if workers is not None:
                await asyncio.to_thread(workers.stop)
            if owned:
                await app.state.services.aclose()

    app = FastAPI(
        title="pgrag",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        # Before any other dependency and the route: text that cannot be stored is refused at the edge.
        dependencies=[Depends(refuse_unstorable_text)],
    )
    app.state.rate_limiter = RateLimiter()
    app.state.mcp = McpHttp()
    if services is not None:  # ready services serve at once, with or without a lifespan run
        app.state.services = services
    install_error_handlers(app)
    # Outermost last: every response (a 413 and a CORS preflight included) carries its request id,
    # and a browser sees the 413 with its CORS headers.
    app.add_middleware(BodySizeLimit, limit=resolved.max_request_bytes)
    if resolved.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=resolved.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            # MCP clients in a browser (POST /mcp) send the protocol version and, with sessions, an id
            allow_headers=[
                "Authorization",
                "Content-Type",
                REQUEST_ID_HEADER,
                "Mcp-Protocol-Version",
                "Mcp-Session-Id",
            ],
            expose_headers=[REQUEST_ID_HEADER, "Retry-After", "Mcp-Session-Id"],
            max_age=600,
        )
    app.add_middleware(RequestId)
    app.add_middleware(RequestMetrics)  # outermost: times everything, 413s and preflights included

    for module in ROUTES:
        app.include_router(module.router)
    app.include_router(mcp_http.router)  # POST /mcp: the MCP server (not in the OpenAPI schema)
    install_page(app, resolved)
    if resolved.metrics_enabled:
        app.include_router(metrics.router)

    @app.get("/health", tags=["health"], summary="Liveness and database check")
    def health(request: Request) -> dict[str, str]:
        with request.app.state.services.pool.connection() as conn:
            conn.execute("select 1")
        return {"status": "ok"}

    return app
