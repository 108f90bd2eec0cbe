"""The wire client of OpenAI-compatible servers (DeepSeek, DashScope, vLLM, Ollama, ...), shared by the
chat model and the embedder: JSON POSTs and SSE streams over httpx.

Plain httpx rather than the `openai` SDK: the protocol surface is two endpoints, httpx is a dependency
already (web search, rerankers), and what the SDK would add has to be ours anyway: the project's retry
policy (LLM_MAX_RETRIES, jittered backoff, a capped Retry-After, no retry once text was streamed), the
server's own error text to detect unsupported options, and one error type (ProviderError, a 502) for
every failure, a malformed body included.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import httpx

from backend.errors import ProviderError

log = logging.getLogger(__name__)

Kind = Literal["http", "timeout", "network", "malformed", "stream"]
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_HINTS = {
    401: "check the API key",
    403: "check the API key and that it may use this model",
    404: "check the model name and the base URL (most servers want it to end in /v1)",
}


class UpstreamError(ProviderError):
    """One failed exchange with the server: `status` (HTTP, or None), `kind`, the server's own `detail`."""

    def __init__(self, message: str, *, kind: Kind, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.detail = detail or message
        self.retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        if self.kind in ("timeout", "network", "stream"):
            return True
        return self.status is not None and (self.status in _RETRYABLE_STATUS or self.status >= 500)


class OpenAIClient:
    """POSTs to `base_url` (the API root with its /v1) with a bearer key; `label` names it in errors."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        label: str,
        timeout_s: float,
        max_retries: int,
        timeout_setting: str,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_retry_after_s: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.label = label
        self.max_retries = max_retries
        self._timeout_s = timeout_s
        self._timeout_setting = timeout_setting
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._max_retry_after_s = max_retry_after_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = client or httpx.Client(
            base_url=base_url.rstrip("/") + "/", timeout=httpx.Timeout(timeout_s), headers=headers
        )

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON object answering `body`, retried on 429/5xx and network failures; else UpstreamError."""
        attempt = 0
        while True:
            try:
                return self.post_once(path, body)
            except UpstreamError as exc:
                self.retry_or_raise(exc, attempt)
            attempt += 1

    def post_once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt: the response's JSON object, or UpstreamError."""
        with self._exchange():
            response = self._http.post(path, json=body)
        self._raise_for_status(response)
        try:
            value = response.json()
        except ValueError:
            raise self._malformed(f"a body that is not JSON: {_excerpt(response.text)}") from None
        if not isinstance(value, dict):
            raise self._malformed(f"JSON that is not an object: {_excerpt(response.text)}")
        return value

    def stream_once(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """One streamed attempt: each SSE `data:` event as an object until `[DONE]` (or the end)."""
        with self._exchange(), self._http.stream("POST", path, json=body) as response:
            if response.status_code != 200:
                response.read()
                self._raise_for_status(response)
            events, other = 0, ""
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    # blank separators, ": comments", "event:" lines; anything else is kept to report
                    other = other or ("" if not line.strip() or line.startswith((":", "event:")) else line)
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except ValueError:
                    raise self._malformed(f"a stream event that is not JSON: {_excerpt(data)}") from None
                if not isinstance(event, dict):
                    raise self._malformed(f"a stream event that is not an object: {_excerpt(data)}")
                if "error" in event:  # vLLM and others report a failure inside the stream
                    detail = _error_text(event)
                    raise UpstreamError(f"{self.label} stream failed: {detail}", kind="stream", detail=detail)
                events += 1
                yield event
            if not events:
                raise self._malformed(f"a stream without data: events: {_excerpt(other) or '(empty)'}")

    def retry_or_raise(self, error: UpstreamError, attempt: int) -> None:
        """After failed attempt number `attempt` (0-based): wait and return if another one may follow,
        else raise the final UpstreamError, which says why and what to check."""
        if error.kind == "malformed":
            raise error  # its message says what came back; a server that answers so is not retried
        if not error.retryable:
            hint = _HINTS.get(error.status or 0)
            raise UpstreamError(
                f"{self.label} rejected the request: {_described(error)}" + (f" ({hint})" if hint else ""),
                kind=error.kind,
                status=error.status,
                detail=error.detail,
            ) from error
        wait = error.retry_after_s
        if wait is not None and wait > self._max_retry_after_s:
            raise UpstreamError(
                f"{self.label} asks to retry after {wait:g} s: {_described(error)}",
                kind=error.kind,
                status=error.status,
                detail=error.detail,
            ) from error
        if attempt >= self.max_retries:
            raise UpstreamError(
                f"{self.label} failed after {attempt + 1} attempt(s): {_described(error)}",
                kind=error.kind,
                status=error.status,
                detail=error.detail,
            ) from error
        delay = min(self._max_backoff_s, self._backoff_s * 2**attempt)
        delay = max(random.uniform(delay / 2, delay), wait or 0.0)  # jitter; never before Retry-After
        log.warning("%s: attempt %d failed (%s), retrying in %.2f s", self.label, attempt + 1, error, delay)
        time.sleep(delay)

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def _exchange(self) -> Iterator[None]:
        """httpx's exceptions as UpstreamErrors (a timeout names the setting to raise)."""
        try:
            yield
        except httpx.TimeoutException as exc:
            what = f"timed out after {self._timeout_s:g} s ({self._timeout_setting})"
            raise UpstreamError(f"{self.label} {what}", kind="timeout", detail=what) from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise UpstreamError(f"{self.label}: {detail}", kind="network", detail=detail) from exc

    def _raise_for_status(self, response: httpx.Response) -> None:
        if response.status_code == 200:
            return
        detail = _error_text(_json_or_text(response))
        error = UpstreamError(
            f"{self.label}: HTTP {response.status_code} {detail}",
            kind="http",
            status=response.status_code,
            detail=detail,
        )
        error.retry_after_s = _retry_after(response.headers.get("Retry-After"))
        raise error

    def _malformed(self, what: str) -> UpstreamError:
        return UpstreamError(f"{self.label} answered with {what}", kind="malformed")


def _described(error: UpstreamError) -> str:
    return f"HTTP {error.status} {error.detail}" if error.status else error.detail


def _json_or_text(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _error_text(payload: Any) -> str:
    """The message of an error body: {"error": {"message"}} (OpenAI, DeepSeek, DashScope, Ollama),
    {"error": "..."}, {"message"} or {"detail"} (vLLM, proxies), else the text itself."""
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return _excerpt(str(error["message"]))
        for value in (error, payload.get("message"), payload.get("detail")):
            if isinstance(value, str) and value.strip():
                return _excerpt(value)
        return _excerpt(json.dumps(payload, ensure_ascii=False))
    return _excerpt(str(payload)) or "(empty body)"


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (a number, or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _excerpt(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
