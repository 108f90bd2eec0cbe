"""Every request's text is checked at the edge: a NUL or an unpaired surrogate anywhere is a 422.

One app-wide dependency (it runs before any other dependency and before the route) looks at
everything FastAPI parsed from the request: path and query parameters, the JSON body (every string,
every key, at any depth: filters, metadata, ...), form fields and uploaded file names. The JSON body
and the form are the ones FastAPI already read (Starlette caches them on the request): nothing is
parsed twice. Uploaded file contents are the loaders' to judge (backend/ingest/decoding.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, params
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.datastructures import UploadFile

from backend.text.hygiene import Location, UnstorableText, find_unstorable


async def refuse_unstorable_text(request: Request) -> None:
    """Raise a 422 naming the first field (or key) holding a NUL or an unpaired surrogate."""
    problem = find_unstorable(dict(request.path_params), ("path",)) or find_unstorable(
        _multi(request.query_params.multi_items()), ("query",)
    )
    if problem is None:
        problem = await _body_problem(request)
    if problem is not None:
        raise RequestValidationError([_error(problem)])


async def _body_problem(request: Request) -> UnstorableText | None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is None:
        return None  # a route without a body never reads one
    if isinstance(route.body_field.field_info, params.Form):
        if not _media_type(request).startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
            return None
        form = await request.form()  # the form FastAPI parsed, cached on the request
        return find_unstorable(_multi(_form_values(form.multi_items())), ("body",))
    if not _is_json(_media_type(request)) or not await request.body():
        return None  # FastAPI passed the raw bytes on; validation refuses them
    return find_unstorable(await request.json(), ("body",))  # the JSON FastAPI decoded, cached


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _is_json(media_type: str) -> bool:
    """As FastAPI decides whether to decode a body as JSON: application/json or application/*+json."""
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _form_values(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A form's fields, an uploaded file standing for its name (its content is the loaders' to judge)."""
    return [
        (key, {"filename": value.filename or ""} if isinstance(value, UploadFile) else value)
        for key, value in items
    ]


def _multi(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """Repeated keys (?a=1&a=2, several files) as lists, so each value has its own location."""
    grouped: dict[str, list[Any]] = {}
    for key, value in items:
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


def _error(problem: UnstorableText) -> dict[str, Any]:
    loc: Location = problem.location
    return {"type": "unstorable_text", "loc": loc, "msg": problem.message, "input": None}
