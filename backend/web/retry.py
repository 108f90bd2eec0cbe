"""One provider request with a wall-clock timeout, retried on 429/5xx/network errors with full-jitter
backoff that honours Retry-After. Failures become a WebSearchError whose message never holds a key."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from backend.config import Settings
from backend.errors import WebSearchError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    timeout_s: float = 8.0
    max_retries: int = 2
    backoff_base_s: float = 0.25
    backoff_max_s: float = 4.0

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        return cls(
            timeout_s=settings.web_timeout_s,
            max_retries=settings.web_max_retries,
            backoff_base_s=settings.web_backoff_base_s,
            backoff_max_s=settings.web_backoff_max_s,
        )

    def backoff(self, retry: int) -> float:
        # Full jitter: callers that failed together do not come back in lockstep.
        return random.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2**retry))


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds (it may be a number or an HTTP date); None when absent or bad."""
    if not value or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class _Failure:
    kind: str
    message: str
    status: int | None = None
    retry_after: float | None = None


async def send(
    client: httpx.AsyncClient,
    build: Callable[[], httpx.Request],
    *,
    provider: str,
    policy: RetryPolicy,
    secrets: Sequence[str] = (),
    hints: Mapping[int, str] | None = None,
) -> tuple[httpx.Response, int]:
    """The first 2xx response and the number of attempts it took; WebSearchError when there is none."""
    attempts = policy.max_retries + 1
    failure = _Failure("network", "no attempt made")
    for attempt in range(1, attempts + 1):
        response, failure = await _attempt(client, build(), policy.timeout_s)
        if response is not None:
            return response, attempt
        if failure.kind == "rejected":
            hint = (hints or {}).get(failure.status or 0, "check the provider settings")
            raise WebSearchError(
                redact(f"{provider} rejected the request ({failure.message}); not retried: {hint}", secrets),
                provider=provider,
                kind="rejected",
                status=failure.status,
                attempts=attempt,
            )
        if attempt == attempts:
            break
        delay = failure.retry_after if failure.retry_after is not None else policy.backoff(attempt - 1)
        if delay > policy.backoff_max_s:
            # Asking again sooner than the server allows only burns quota; give up and say when.
            failure.message += f"; it asks to retry after {delay:.0f} s"
            break
        logger.warning(
            "web search %s attempt %d/%d failed (%s), retrying in %.2f s",
            provider,
            attempt,
            attempts,
            redact(failure.message, secrets),
            delay,
        )
        await asyncio.sleep(delay)
    raise WebSearchError(
        redact(f"{provider} failed after {attempt} attempt(s): {failure.message}", secrets),
        provider=provider,
        kind=failure.kind,
        status=failure.status,
        attempts=attempt,
    )


async def _attempt(
    client: httpx.AsyncClient, request: httpx.Request, timeout_s: float
) -> tuple[httpx.Response | None, _Failure]:
    try:
        # httpx times connect/read/write separately; asyncio.timeout bounds the whole attempt, so a
        # server that trickles bytes cannot hold it for longer.
        async with asyncio.timeout(timeout_s):
            response = await client.send(request)
            await response.aread()
    except (TimeoutError, httpx.TimeoutException):
        return None, _Failure("timeout", f"no response within {timeout_s:g} s (WEB_TIMEOUT_S)")
    except httpx.TransportError as exc:
        return None, _Failure("network", f"{type(exc).__name__}: {_shorten(str(exc)) or 'connection failed'}")
    status = response.status_code
    if 200 <= status < 300:
        return response, _Failure("ok", "")
    detail = f"HTTP {status}" + (f": {_shorten(response.text)}" if response.text.strip() else "")
    if status == 429:
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        return None, _Failure("rate_limited", detail, status, retry_after)
    if status >= 500:
        return None, _Failure(
            "unavailable", detail, status, retry_after_seconds(response.headers.get("retry-after"))
        )
    return None, _Failure("rejected", detail, status)


def json_body(response: httpx.Response, *, provider: str, attempts: int) -> Any:
    """The response's JSON, or a bad_response WebSearchError."""
    try:
        return response.json()
    except ValueError as exc:
        raise WebSearchError(
            f"{provider} answered with something that is not JSON: {_shorten(response.text, 120)!r}",
            provider=provider,
            kind="bad_response",
            status=response.status_code,
            attempts=attempts,
        ) from exc
