"""Token usage a provider reports, collected by whoever is metering the calls (deep research budgets).

The LLM Protocol returns text only; a provider that knows its token counts (Gemini's usage_metadata)
reports them here, to the meter of the current context. A caller meters one call with:

    with metering() as meter:
        text = llm.complete(system, prompt)
    tokens = meter.tokens if meter.reported else estimate

asyncio.to_thread copies the context, so a call run in a worker thread reports to its caller's meter.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class UsageMeter:
    """Tokens reported during one metered call (prompt + output, as the provider counts them)."""

    tokens: int = 0
    reported: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, tokens: int) -> None:
        with self._lock:
            self.tokens += tokens
            self.reported = True


_current: ContextVar[UsageMeter | None] = ContextVar("llm_usage_meter", default=None)


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Collect the usage reported by provider calls made inside the block (in this context)."""
    meter = UsageMeter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def report_tokens(total: int | None) -> None:
    """A provider's count of one response's tokens; ignored when nobody meters or it is unknown."""
    meter = _current.get()
    if meter is not None and total:
        meter.add(int(total))
