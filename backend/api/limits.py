"""Per-caller rate limits: a token bucket per (caller, route group), in this process's memory.

The caller is the verified user (or the service); with AUTH_MODE=none everyone is the same local
user, so there the client address keys the bucket instead - one demo visitor cannot starve the
rest. Buckets live per server process: behind several workers, each enforces its own share (set the
limits per process, or rate-limit at the proxy as well).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import Depends, Request

from backend.api.deps import CurrentUser, ServicesDep
from backend.auth.identity import Identity
from backend.config import Settings
from backend.errors import RateLimited

RouteGroup = Literal["search", "chat", "research", "ingest"]
MAX_BUCKETS = 100_000  # least recently used buckets beyond this are forgotten (memory stays bounded)


class RateLimiter:
    """Token buckets: `per_minute` requests a minute, in bursts of up to `per_minute`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, group: str, per_minute: int) -> float | None:
        """Take one token; None when allowed, else the seconds until one is available."""
        if per_minute <= 0:
            return None
        rate = per_minute / 60.0
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.pop((key, group), (float(per_minute), now))
            tokens = min(float(per_minute), tokens + (now - last) * rate)
            allowed = tokens >= 1.0
            self._buckets[(key, group)] = (tokens - 1.0 if allowed else tokens, now)
            while len(self._buckets) > MAX_BUCKETS:
                self._buckets.popitem(last=False)
        return None if allowed else (1.0 - tokens) / rate


def spend(request: Request, user: Identity, settings: Settings, group: RouteGroup) -> None:
    """Spend one of the caller's `group` requests, or raise RateLimited (429) with when to retry.
    The routes' dependency and the MCP tools (one tool call, one request) share it."""
    per_minute = getattr(settings, f"rate_limit_{group}_per_minute")
    if settings.auth_mode == "none" and not user.is_service:
        key = f"addr:{request.client.host if request.client else 'unknown'}"
    else:
        key = f"user:{user.user_id or 'service'}"
    wait = request.app.state.rate_limiter.take(key, group, per_minute)
    if wait is not None:
        raise RateLimited(
            f"too many {group} requests: at most {per_minute} a minute "
            f"(RATE_LIMIT_{group.upper()}_PER_MINUTE); try again in {math.ceil(wait)} s",
            retry_after_s=math.ceil(wait),
        )


def rate_limit(group: RouteGroup) -> Any:
    """A dependency (Depends(...)) that spends one of the caller's `group` requests, or answers 429."""

    def check(request: Request, user: CurrentUser, services: ServicesDep) -> None:
        spend(request, user, services.settings, group)

    return Depends(check)


SearchLimit = Annotated[None, rate_limit("search")]
ChatLimit = Annotated[None, rate_limit("chat")]
ResearchLimit = Annotated[None, rate_limit("research")]
IngestLimit = Annotated[None, rate_limit("ingest")]
