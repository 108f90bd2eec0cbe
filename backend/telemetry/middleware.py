"""Request latency per route template, recorded by a pure ASGI middleware (streaming-safe)."""

from __future__ import annotations

import time
from http import HTTPStatus

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.telemetry.metrics import Metrics

# Label values a client cannot invent: the request line's method is the client's to choose (3,000
# made-up methods grew /metrics to 15.6 MB), so any method outside this set is "other", and so is a
# status outside HTTP's registry. The route is the matched template, never the raw path.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
STATUSES = frozenset(str(status.value) for status in HTTPStatus)
OTHER = "other"


def method_label(method: str) -> str:
    return method if method in METHODS else OTHER


def status_label(status: int) -> str:
    return str(status) if str(status) in STATUSES else OTHER


class RequestMetrics:
    """Observe every HTTP request's latency under its route template (/documents/{document_id}, not the
    id), method and status. Paths no route matched share the label "unmatched", methods and statuses
    outside the fixed sets the label "other", so neither a scanner nor made-up methods can grow the
    label set. The metrics object is looked up per request on the app's services, which exist
    only once the lifespan has built them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            metrics = _metrics(scope)
            if metrics is not None:
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                metrics.requests.labels(
                    method_label(scope.get("method", "")), template, status_label(status)
                ).observe(time.perf_counter() - started)


def _metrics(scope: Scope) -> Metrics | None:
    app = scope.get("app")
    services = getattr(getattr(app, "state", None), "services", None)
    return getattr(services, "metrics", None)
