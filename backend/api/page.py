"""The chat page: static files from backend/webapp served at / (plain HTML, CSS and JS modules: no build).

The page is a client of the public API like any other (it reads GET /client-config first), so it
gets no route of its own beyond its files. Its one HTML response carries a Content-Security-Policy:
scripts and styles only from this origin, and network calls only to this origin and, with Supabase
auth, the project's Auth server; answer text comes from documents and web pages, so the page never
lets it run as code.
"""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

from backend.config import Settings

WEBAPP_DIR = Path(__file__).resolve().parent.parent / "webapp"
ASSETS_PATH = "/app"


def install_page(app: FastAPI, settings: Settings) -> None:
    """GET / (the page) and /app/* (its modules, styles and icon)."""
    index = (WEBAPP_DIR / "index.html").read_text(encoding="utf-8")
    headers = {
        "Content-Security-Policy": content_security_policy(settings),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(index, headers=headers)

    # no-cache on the modules too (StaticFiles answers a revalidation with 304): an upgrade of the
    # backend must not meet yesterday's app.js in a browser's cache.
    app.mount(ASSETS_PATH, _RevalidatedFiles(directory=WEBAPP_DIR), name="webapp")


def content_security_policy(settings: Settings) -> str:
    connect = ["'self'"]
    if settings.auth_mode == "supabase" and settings.supabase_url.strip():
        parts = urlsplit(settings.supabase_url.strip())
        connect.append(f"{parts.scheme}://{parts.netloc}")
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            f"connect-src {' '.join(connect)}",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


class _RevalidatedFiles(StaticFiles):
    def file_response(
        self,
        full_path: PathLike[str] | str,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = "no-cache"
        return response
