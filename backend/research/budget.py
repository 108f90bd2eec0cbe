"""One run's budget: a deadline, model calls, tokens and searches, spent from every branch of the run.

Branches run as asyncio tasks on one loop, but model calls and searches finish in worker threads, so
the counters take a lock. Spending is all-or-nothing: a search or model call either gets its share
before it starts or does not start, and the first budget to run out is recorded (the report is then
partial, with that reason). Writing keeps a reserve of model calls, so a run that spent its calls on
research still writes each section with the model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from backend.research.presets import RunLimits

BudgetName = Literal["deadline", "max_model_calls", "max_tokens", "max_searches"]
Phase = Literal["plan", "research", "write"]


@dataclass
class RunBudget:
    limits: RunLimits
    write_reserve: float  # share of the deadline kept for writing
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    model_calls: int = 0
    tokens: int = 0
    tokens_estimated: int = 0  # of `tokens`, how many were estimated (the provider reported none)
    searches: int = 0
    reserved_calls: int = 1  # model calls kept for writing (one per section once the plan is known)
    exhausted: list[BudgetName] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    # --- time ------------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        """Seconds until the run's deadline (negative when past it)."""
        return self.limits.deadline_s - self.elapsed()

    def research_remaining(self) -> float:
        """Seconds research may still take: the deadline minus the share kept for writing."""
        return self.limits.deadline_s * (1 - self.write_reserve) - self.elapsed()

    # --- spending --------------------------------------------------------------------------------

    def reserve_for_writing(self, sections: int) -> None:
        with self._lock:
            self.reserved_calls = max(1, sections)

    def take_search(self, phase: Phase = "research") -> bool:
        """One search, or False (and max_searches recorded) when none is left. Research stops once any
        budget ran out; writing may still search an empty section while searches remain."""
        with self._lock:
            if phase != "write" and self.exhausted:
                return False
            if self.searches >= self.limits.max_searches:
                self._exhaust("max_searches")
                return False
            self.searches += 1
            return True

    def take_model_call(self, phase: Phase) -> bool:
        """One model call, or False when the calls or tokens are spent (writing may use the reserve;
        research stops once anything is exhausted, writing carries on with what is left)."""
        with self._lock:
            if phase != "write" and self.exhausted:
                return False
            if self.tokens >= self.limits.max_tokens:
                self._exhaust("max_tokens")
                return False
            reserve = 0 if phase == "write" else self.reserved_calls
            if self.model_calls + reserve >= self.limits.max_model_calls:
                self._exhaust("max_model_calls")
                return False
            self.model_calls += 1
            return True

    def spend_tokens(self, tokens: int, *, estimated: bool) -> None:
        with self._lock:
            self.tokens += tokens
            if estimated:
                self.tokens_estimated += tokens
            if self.tokens >= self.limits.max_tokens:
                self._exhaust("max_tokens")

    def exhaust(self, name: BudgetName) -> None:
        with self._lock:
            self._exhaust(name)

    def _exhaust(self, name: BudgetName) -> None:
        if name not in self.exhausted:
            self.exhausted.append(name)

    @property
    def stopped(self) -> bool:
        """Whether research must start no new work (a budget ran out, or research time is up)."""
        return bool(self.exhausted) or self.research_remaining() <= 0

    def stop_reason(self) -> BudgetName | None:
        if self.exhausted:
            return self.exhausted[0]
        return "deadline" if self.research_remaining() <= 0 else None

    def usage(self) -> dict[str, object]:
        with self._lock:
            return {
                "model_calls": self.model_calls,
                "tokens": self.tokens,
                "tokens_estimated": self.tokens_estimated,
                "searches": self.searches,
                "elapsed_s": round(self.elapsed(), 3),
            }
