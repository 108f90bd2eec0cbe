"""Soft-wait (seed: evidence-retention.md, section five): local retrieval and the web legs start together;
local has a hard timeout, the web a soft deadline. What the web legs have by the deadline is used; the
rest is cancelled — the asyncio task, and with it the httpx request and its connection, so nothing is
left running in a worker thread or holding the response.

The web deadline is measured from the start, and never cuts a leg while local retrieval is still
running (the response waits for local anyway). Chat: WEB_SOFT_WAIT_MS, 2000 ms by default: a cached
answer takes milliseconds and a basic Tavily search about a second, while 2 s is the most a slow
provider can add to the time before the answer starts. Deep research: the seed's rule,
min(5 x the local timeout, 300 s), since a research step values slow sources (Scholar ~145 s) over speed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from backend.config import Settings
from backend.web.search import WebLeg, merge_results
from backend.web.types import WebResult

T = TypeVar("T")
Mode = Literal["chat", "research"]

RESEARCH_SOFT_WAIT_FACTOR = 5
RESEARCH_SOFT_WAIT_CAP_S = 300.0
# Slack of the outer asyncio.timeout over the budget: it only trips if a leg ignores cancellation.
_GRACE_S = 5.0


@dataclass(frozen=True)
class WaitBudget:
    local_timeout_s: float
    soft_wait_s: float

    @classmethod
    def for_mode(cls, settings: Settings, mode: Mode = "chat") -> WaitBudget:
        local = settings.web_local_timeout_s
        if mode == "research":
            return cls(local, min(local * RESEARCH_SOFT_WAIT_FACTOR, RESEARCH_SOFT_WAIT_CAP_S))
        return cls(local, settings.web_soft_wait_ms / 1000)


@dataclass
class SoftWaitDiagnostics:
    local_timeout: bool = False  # local retrieval exceeded its hard timeout: no local evidence
    web_timeout: bool = False  # at least one provider was cut at the soft deadline
    soft_wait_ms: int = 0  # how long the response waited for the web after local retrieval was done
    soft_deadline_ms: int = 0
    local_ms: int | None = None
    elapsed_ms: int = 0
    providers: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "providers": list(self.providers)}


@dataclass
class SoftWaitOutcome(Generic[T]):
    local: T | None
    web: list[WebResult]
    diagnostics: SoftWaitDiagnostics


@dataclass
class _Local(Generic[T]):
    value: T | None = None
    timed_out: bool = False
    error: BaseException | None = None


async def soft_wait(
    local: Awaitable[T] | None, legs: Sequence[WebLeg], budget: WaitBudget
) -> SoftWaitOutcome[T]:
    """Run local retrieval (if any) and the web legs together under `budget`; errors of the local
    awaitable are re-raised unchanged, web failures are only diagnostics."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    box: _Local[T] = _Local()
    cut: list[WebLeg] = []
    async with asyncio.timeout(max(budget.local_timeout_s, budget.soft_wait_s) + _GRACE_S):
        async with asyncio.TaskGroup() as group:
            web = {group.create_task(leg.run()): leg for leg in legs}
            if local is not None:
                await asyncio.wait([group.create_task(_run_local(local, budget.local_timeout_s, box))])
            local_done = loop.time()
            pending = [task for task in web if not task.done()]
            # A failed local leg fails the request: no reason to keep the web legs running.
            remaining = 0.0 if box.error else start + budget.soft_wait_s - local_done
            if pending and remaining > 0:
                await asyncio.wait(pending, timeout=remaining)
            for task, leg in web.items():
                if not task.done():
                    task.cancel()
                    cut.append(leg)
            stopped = loop.time()
        # Leaving the group awaited the cancelled legs: their requests are aborted, connections closed.
    if box.error is not None:
        raise box.error
    for leg in cut:
        _mark_cut(leg, budget)
    diagnostics = SoftWaitDiagnostics(
        local_timeout=box.timed_out,
        web_timeout=bool(cut),
        soft_wait_ms=round((stopped - local_done) * 1000) if legs else 0,
        soft_deadline_ms=round(budget.soft_wait_s * 1000),
        local_ms=round((local_done - start) * 1000) if local is not None else None,
        elapsed_ms=round((loop.time() - start) * 1000),
        providers=[leg.diagnostics.as_dict() for leg in legs],
    )
    return SoftWaitOutcome(local=box.value, web=merge_results(legs), diagnostics=diagnostics)


async def web_only(legs: Sequence[WebLeg], budget: WaitBudget) -> SoftWaitOutcome[None]:
    """The web legs alone under the soft deadline (the web leg started after local retrieval decided)."""
    return await soft_wait(None, legs, budget)


async def _run_local(local: Awaitable[T], timeout_s: float, box: _Local[T]) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            box.value = await local
    except TimeoutError:
        box.timed_out = True
    except Exception as exc:  # re-raised by soft_wait after the web legs are cancelled
        box.error = exc


def _mark_cut(leg: WebLeg, budget: WaitBudget) -> None:
    d = leg.diagnostics
    message = f"cut at the soft deadline ({budget.soft_wait_s * 1000:.0f} ms)"
    if leg.results:
        d.page_errors.append(f"deep read {message}")
    else:
        d.status, d.error_kind, d.error = "timeout", "timeout", f"no answer: {message}"
