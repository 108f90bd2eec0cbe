"""The current request's id, for logs and error bodies (set by the RequestId middleware)."""

from __future__ import annotations

import logging
from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)


class RequestIdLogFilter(logging.Filter):
    """Adds `request_id` to every log record ("-" outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get() or "-"
        return True
