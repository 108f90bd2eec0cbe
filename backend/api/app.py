"""The FastAPI application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from backend import __version__
from backend.api.errors import install_error_handlers
from backend.api.routes import chat, conversations, documents, search
from backend.config import Settings, get_settings
from backend.services.container import Services, build_services

DESCRIPTION = """
Postgres-native RAG: documents are chunked, segmented with jieba and embedded into PostgreSQL +
pgvector; `hybrid_search` (full-text OR + HNSW, fused by RRF in SQL) prefetches, a heuristic reranker
and a dynamic top-k cut choose the evidence, and answers cite it as `[n]`. Every assistant message
stores its sources, so a client can redraw citations later.
"""


def create_app(services: Services | None = None, settings: Settings | None = None) -> FastAPI:
    """The app; tests pass ready services, the server builds them from settings at start-up."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = services is None
        app.state.services = services or build_services(settings or get_settings())
        try:
            yield
        finally:
            if owned:
                app.state.services.close()

    app = FastAPI(title="pgrag", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    install_error_handlers(app)
    limit = (settings or (services.settings if services else get_settings())).max_request_bytes

    @app.middleware("http")
    async def limit_body_size(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            return JSONResponse(
                {
                    "detail": f"request body of {length} bytes exceeds the limit of {limit} "
                    "bytes (MAX_REQUEST_BYTES)",
                    "error": "PayloadTooLarge",
                },
                status_code=413,
            )
        return await call_next(request)

    for module in (documents, search, chat, conversations):
        app.include_router(module.router)

    @app.get("/health", tags=["health"], summary="Liveness and database check")
    def health(request: Request) -> dict[str, str]:
        with request.app.state.services.pool.connection() as conn:
            conn.execute("select 1")
        return {"status": "ok"}

    return app
