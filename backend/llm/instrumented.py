"""An LLM wrapped so that answers are timed (stage "generate") and provider failures counted.

The composition function wraps whatever LLM it built or was given; a tool-calling model keeps its
answer_with_tools (chat checks for it with isinstance), so assist mode is unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from backend.errors import ProviderError
from backend.llm.base import LLM, Sampling, SourceText, ToolCallingLLM, Tools, Turn
from backend.telemetry.metrics import Metrics


class InstrumentedLLM:
    """Delegates to `inner`; answer streams are timed from the call to the last delta."""

    def __init__(self, inner: LLM, metrics: Metrics) -> None:
        self.inner = inner
        self.name = inner.name
        self.generator = inner.generator
        self._metrics = metrics

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        return self._timed(lambda: self.inner.answer(question, sources, history, sampling))

    def complete(self, system: str, prompt: str) -> str | None:
        try:
            return self.inner.complete(system, prompt)
        except ProviderError:
            self._metrics.provider_error("llm", self.name)
            raise

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.inner.complete_json(system, prompt, schema)
        except ProviderError:
            self._metrics.provider_error("llm", self.name)
            raise

    def close(self) -> None:
        """Close the wrapped model's HTTP client, when it has one."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def _timed(self, start: Callable[[], Iterator[str]]) -> Iterator[str]:
        started = time.perf_counter()
        try:
            yield from start()
        except ProviderError:
            self._metrics.provider_error("llm", self.name)
            raise
        finally:
            self._metrics.observe_stage("generate", time.perf_counter() - started)


class InstrumentedToolLLM(InstrumentedLLM):
    """The same for a model that can call tools while answering (assist mode)."""

    def answer_with_tools(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn],
        tools: Tools,
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        inner = self.inner
        assert isinstance(inner, ToolCallingLLM)
        return self._timed(lambda: inner.answer_with_tools(question, sources, history, tools, sampling))


def instrument_llm(llm: LLM, metrics: Metrics) -> LLM:
    """`llm` timed and counted; an already wrapped one is returned as it is."""
    if isinstance(llm, InstrumentedLLM):
        return llm
    if isinstance(llm, ToolCallingLLM):
        return InstrumentedToolLLM(llm, metrics)
    return InstrumentedLLM(llm, metrics)
