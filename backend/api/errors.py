"""Errors -> HTTP responses, in one place. A user sees a message, never a stack trace or SQL."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from backend.api.request_context import request_id_var
from backend.errors import AuthUnavailable, DomainError, RateLimited, Unauthorized
from backend.text.hygiene import location_text, printable

logger = logging.getLogger(__name__)


class ErrorOut(BaseModel):
    """Every error answer: a message for a person, a stable name for code, the request's id."""

    detail: str = Field(description="what went wrong and, where it helps, what to do")
    error: str = Field(description="a stable name: InvalidRequest, NotFound, Unauthorized, RateLimited, ...")
    request_id: str | None = Field(default=None, description="the X-Request-ID of the request (also in logs)")
    errors: list[str] | None = Field(default=None, description="422: one entry per invalid field")


_ERROR_STATUSES = {
    400: "A body that cannot be parsed at all (not UTF-8, a malformed multipart form, nested too deep)",
    401: "No or invalid access token (AUTH_MODE=supabase); the WWW-Authenticate header says why",
    403: "Known caller, not allowed (e.g. deleting a public document)",
    404: "No such resource, or one the caller may not see",
    409: "The query would be embedded by another model than the corpus",
    413: "Request body over MAX_REQUEST_BYTES, or a file past a parse limit (PARSE_TIMEOUT_S, "
    "PARSE_MEMORY_MB, PDF_MAX_PAGES, MAX_DOCUMENT_CHARS); the message names it",
    415: "A file that cannot be read as text",
    422: "Invalid field or option; the message names it",
    429: "Over the caller's rate limit; Retry-After says when to try again",
    500: "Internal error (logged with the request id)",
    502: "An upstream provider (embeddings, LLM) failed after retries",
    503: "The database or the sign-in keys are unreachable",
    504: "A database statement took longer than DB_STATEMENT_TIMEOUT_MS, or the search of the documents "
    "longer than WEB_LOCAL_TIMEOUT_S beside a web leg",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text} for status, text in _ERROR_STATUSES.items()
}

REALM = "pgrag"
# RFC 6750 section 3: error_description is limited to printable ASCII without '"' and '\\'.
_NOT_IN_DESCRIPTION = re.compile(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]")
AUTH_RETRY_AFTER_S = 5


def www_authenticate(exc: Unauthorized) -> str:
    """The RFC 6750 challenge for a 401: the realm, plus the error when a token was sent."""
    if exc.oauth_error is None:
        return f'Bearer realm="{REALM}"'
    description = _NOT_IN_DESCRIPTION.sub("?", str(exc))
    return f'Bearer realm="{REALM}", error="{exc.oauth_error}", error_description="{description}"'


def error_payload(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) for any exception: what a response, or an SSE `error` event, carries.

    Domain errors keep their message; database failures say what happened without SQL text;
    anything else is an internal error whose details go to the log only. Every body carries the
    request id, which the log lines of that request carry too.
    """
    status, body = _payload(exc)
    return status, {**body, "request_id": request_id_var.get()}


def _payload(exc: Exception) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, DomainError):
        # A message may quote the caller's input: escaped, so that no input can break the response.
        return exc.status_code, {"detail": printable(str(exc)), "error": type(exc).__name__}
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return 504, {
            "detail": "the database query took too long and was cancelled (DB_STATEMENT_TIMEOUT_MS); "
            "try again, or narrow the request",
            "error": "DatabaseTimeout",
        }
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        # Row-level security refused a write the service's own checks let through (they give the
        # reason first, as a Forbidden): still the caller's 403, never a 500.
        return 403, {
            "detail": "the database refused this change: your role does not allow it",
            "error": "Forbidden",
        }
    if isinstance(exc, psycopg.OperationalError):
        return 503, {
            "detail": "the database is unavailable; try again shortly",
            "error": "DatabaseUnavailable",
        }
    return 500, {"detail": "internal error; it has been logged", "error": "InternalError"}


def log_failure(exc: Exception, where: str) -> None:
    """Log what error_payload hides from the user (domain errors are the user's, not ours)."""
    if isinstance(exc, DomainError):
        return
    if isinstance(exc, psycopg.Error):
        logger.error("%s: database error: %s", where, exc)
    else:
        logger.exception("%s: unexpected error", where, exc_info=exc)


def _headers(exc: Exception) -> dict[str, str] | None:
    """Headers some errors owe the client: a 401's challenge, a retry hint when Auth is unreachable."""
    if isinstance(exc, Unauthorized):
        return {"WWW-Authenticate": www_authenticate(exc)}
    if isinstance(exc, AuthUnavailable):
        logger.error("authentication unavailable: %s", exc)
        return {"Retry-After": str(AUTH_RETRY_AFTER_S)}
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after_s)}
    return None


# What the framework itself refuses (Starlette's HTTPException), by status, in the shape of ErrorOut.
_HTTP_ERROR_NAMES = {400: "MalformedBody", 404: "NotFound", 405: "MethodNotAllowed"}
_FASTAPI_PARSE_ERROR = "There was an error parsing the body"


def format_location(loc: tuple[Any, ...] | list[Any]) -> str:
    """A validation error's location for a person: filters.tags.$in[3], metadata["a b"], query.limit
    (a body field is named without "body.")."""
    parts = tuple(loc[1:] if loc and loc[0] == "body" else loc)
    return location_text(parts, root="body")


def _problem(err: dict[str, Any]) -> str:
    """One line of a 422: where, then what (an error message may quote input: escaped)."""
    if err.get("type") == "json_invalid":
        why = printable(str((err.get("ctx") or {}).get("error", "")))
        return f"body: invalid JSON at character {err['loc'][-1]}: {why}"
    return f"{format_location(err['loc'])}: {printable(str(err['msg']))}"


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        log_failure(exc, f"{request.method} {request.url.path}")
        status, body = error_payload(exc)
        return respond(request, status, body, _headers(exc))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(err) for err in exc.errors()]
        body = {"detail": "; ".join(problems), "error": "InvalidRequest", "errors": problems}
        return respond(request, 422, {**body, "request_id": request_id_var.get()})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """The framework's own refusals (an unparseable body, an unknown path or method) as ErrorOut."""
        detail = printable(str(exc.detail))
        if exc.status_code == 400:  # FastAPI's own words say nothing; Starlette's name the form's fault
            why = "not UTF-8, or nested too deep" if detail == _FASTAPI_PARSE_ERROR else detail
            detail = f"the request body cannot be parsed ({why}); send UTF-8 JSON or a valid multipart form"
        name = _HTTP_ERROR_NAMES.get(exc.status_code, "HTTPError")
        body = {"detail": detail, "error": name, "request_id": request_id_var.get()}
        return respond(request, exc.status_code, body, exc.headers)

    app.add_exception_handler(DomainError, handle)
    app.add_exception_handler(psycopg.Error, handle)
    # Anything else escapes to the RequestId middleware, which answers the same JSON 500.


# --- the OpenAI-compatible routes (/v1/...) answer errors in OpenAI's shape ---------------------------

OPENAI_PREFIX = "/v1/"


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str = Field(description="invalid_request_error, authentication_error, permission_error, ...")
    param: str | None = None
    code: str | None = Field(default=None, description="pgrag's stable error name (InvalidRequest, ...)")


class OpenAIErrorOut(BaseModel):
    """An error of /v1/*, as OpenAI's API and clients shape it."""

    error: OpenAIErrorDetail
    request_id: str | None = None


_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
OPENAI_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": OpenAIErrorOut, "description": text}
    for status, text in _ERROR_STATUSES.items()
    if status != 422  # an invalid request is a 400 here, as OpenAI answers it
}


def openai_error(status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(status, body) of an error in OpenAI's shape: a 422 is OpenAI's 400 invalid_request_error."""
    status = 400 if status == 422 else status
    kind = _OPENAI_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    detail = {"message": body["detail"], "type": kind, "param": None, "code": body.get("error")}
    return status, {"error": detail, "request_id": body.get("request_id")}


def respond(
    request: Request, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    if request.url.path.startswith(OPENAI_PREFIX):
        status, body = openai_error(status, body)
    return JSONResponse(body, status_code=status, headers=headers)
