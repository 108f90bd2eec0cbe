"""The model as a research run uses it: every call budgeted, timed out, metered and allowed to fail.

A call runs in a worker thread (the providers are synchronous) under min(RESEARCH_MODEL_TIMEOUT_S,
time left). It returns None instead of raising when the budget refuses it, the provider fails, or it
takes too long: each caller has a fallback (heuristic plan, heuristic sufficiency, extractive
writing), so a model problem degrades the report instead of failing the run. The thread of a call
that timed out finishes on its own (the provider's HTTP timeout bounds it); its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

from backend.chat.rewrite import Rewrite, rewrite_followup
from backend.errors import ProviderError
from backend.llm import LLM, ExtractiveLLM, SourceText, Turn
from backend.llm.usage import metering
from backend.research.budget import Phase, RunBudget
from backend.text.hygiene import scrub
from backend.text.tokens import estimate_tokens

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class ModelOutcome:
    """Why a model call gave nothing: 'budget', 'timeout', 'error: ...', 'empty', or None (it did)."""

    failure: str | None


class ResearchModel:
    """The run's LLM behind its budget. Without a generative model (extractive), nothing is called."""

    def __init__(
        self, llm: LLM, budget: RunBudget, timeout_s: float, executor: Executor | None = None
    ) -> None:
        self.llm = llm
        self.budget = budget
        self.timeout_s = timeout_s
        # The service's own threads: a call that timed out keeps its thread until the provider gives
        # up, and must not take the event loop's default executor (searches, other requests) with it.
        self.executor = executor
        self.generative = llm.generator != "extractive"
        self._extractive = ExtractiveLLM()

    async def complete_json(
        self, phase: Phase, system: str, prompt: str, schema: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, ModelOutcome]:
        """A structured completion, or (None, why not)."""
        if not self.generative:
            return None, ModelOutcome("no generative model")
        value, outcome = await self._call(
            phase,
            lambda: self.llm.complete_json(system, prompt, schema),
            prompt_text=system + prompt,
            output_text=lambda v: str(v or ""),
        )
        if outcome.failure is None and value is None:
            return None, ModelOutcome("malformed output (no JSON object)")
        return scrub(value), outcome  # plans and verdicts are stored: nothing unstorable in them

    async def complete(self, phase: Phase, system: str, prompt: str) -> tuple[str | None, ModelOutcome]:
        if not self.generative:
            return None, ModelOutcome("no generative model")
        return await self._call(
            phase,
            lambda: self.llm.complete(system, prompt),
            prompt_text=system + prompt,
            output_text=lambda v: v or "",
        )

    async def rewrite(self, question: str, history: Sequence[Turn]) -> Rewrite:
        """A follow-up made self-contained with the conversation (the model's rewrite, else the pronoun
        heuristic); a question without history is used as it is."""
        if history and self.generative:
            rewrite, _ = await self._call(
                "plan",
                lambda: rewrite_followup(question, history, self.llm),
                prompt_text=question + "".join(t.content for t in history),
                output_text=lambda v: v.query if v else "",
            )
            if rewrite is not None:
                return rewrite
        return await asyncio.to_thread(rewrite_followup, question, history, self._extractive)

    async def write(self, question: str, sources: Sequence[SourceText]) -> tuple[str, str, ModelOutcome]:
        """(text, generator, outcome): the model's cited answer, else the extractive one (the fallback
        needs no model and no budget, so a section is always written)."""
        if self.generative:
            text, outcome = await self._call(
                "write",
                lambda: "".join(self.llm.answer(question, sources)),
                prompt_text=question + "".join(s.content for s in sources),
                output_text=lambda v: v or "",
            )
            if text and text.strip():
                return text, self.llm.generator, outcome
            outcome = outcome if outcome.failure else ModelOutcome("empty")
        else:
            outcome = ModelOutcome(None)
        text = await asyncio.to_thread(lambda: "".join(self._extractive.answer(question, sources)))
        return text, self._extractive.generator, outcome

    async def _call(
        self,
        phase: Phase,
        call: Callable[[], T],
        *,
        prompt_text: str,
        output_text: Callable[[T | None], str],
    ) -> tuple[T | None, ModelOutcome]:
        remaining = self.budget.remaining()
        if remaining <= 0:
            self.budget.exhaust("deadline")
            return None, ModelOutcome("budget: deadline")
        if not self.budget.take_model_call(phase):
            return None, ModelOutcome(f"budget: {self.budget.stop_reason() or 'max_model_calls'}")
        reported: list[int] = []

        def metered() -> T:
            with metering() as meter:
                try:
                    return call()
                finally:
                    if meter.reported:
                        reported.append(meter.tokens)

        result: T | None = None
        failure: str | None = None
        try:
            async with asyncio.timeout(min(self.timeout_s, remaining)):
                context = contextvars.copy_context()
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(self.executor, context.run, metered)
        except TimeoutError:
            failure = "timeout"
        except ProviderError as exc:
            failure = f"error: {exc}"
        if failure:
            log.warning("research model call (%s) gave nothing: %s", phase, failure)
        if reported:
            self.budget.spend_tokens(sum(reported), estimated=False)
        else:
            # No usage from the provider (a scripted model, a timeout): estimate what was sent and read.
            tokens = estimate_tokens(prompt_text) + estimate_tokens(output_text(result))
            self.budget.spend_tokens(tokens, estimated=True)
        return result, ModelOutcome(failure)
