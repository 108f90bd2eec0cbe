"""Operational telemetry: Prometheus metrics (docs/telemetry.md)."""

from backend.telemetry.metrics import CONTENT_TYPE, Metrics, ProviderKind, Stage
from backend.telemetry.middleware import RequestMetrics

__all__ = ["CONTENT_TYPE", "Metrics", "ProviderKind", "RequestMetrics", "Stage"]
