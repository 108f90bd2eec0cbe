"""Errors -> HTTP responses, in one place. A user sees a message, never a stack trace."""

from __future__ import annotations

import logging

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from backend.errors import DomainError

logger = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"] if p != "body") or "body"
            problems.append(f"{loc}: {err['msg']}")
        return JSONResponse(
            {"detail": "; ".join(problems), "error": "InvalidRequest", "errors": problems}, status_code=422
        )

    @app.exception_handler(psycopg.OperationalError)
    async def database_unavailable(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        logger.error("database unavailable: %s", exc)
        return JSONResponse(
            {"detail": "the database is unavailable; try again shortly", "error": "DatabaseUnavailable"},
            status_code=503,
        )
