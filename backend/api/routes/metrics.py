"""GET /metrics: this process's Prometheus metrics (docs/telemetry.md). Registered only when
METRICS_ENABLED; like /health it needs no sign-in, so scrapers need no user token: expose it on a
private network (or turn it off). It holds counts and timings, never query text or user ids."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from backend.api.deps import ServicesDep
from backend.telemetry import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    summary="Prometheus metrics of this process (text exposition format)",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}},
)
def metrics(services: ServicesDep) -> Response:
    return Response(services.metrics.exposition(), media_type=CONTENT_TYPE)
