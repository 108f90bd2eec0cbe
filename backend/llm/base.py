"""The LLM seam: what the chat service needs from a generator, and the values it passes in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class SourceText:
    """One retrieved passage as the model sees it; `n` is the number it cites as [n]."""

    n: int
    title: str
    heading: str  # heading path joined with " > ", may be ""
    content: str


@dataclass(frozen=True)
class Turn:
    """One earlier message of the conversation."""

    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Sampling:
    """What a client asked of the generator for one answer (the OpenAI API's temperature / max_tokens);
    None: the provider's own setting. A generator that samples nothing (extractive) ignores it."""

    temperature: float | None = None
    max_tokens: int | None = None


class LLM(Protocol):
    """A generator of cited answers, plus free-form completions for helper tasks."""

    name: str  # e.g. "gemini-2.5-flash", "extractive", "scripted"
    generator: str  # "gemini" | "openai_compatible" | "extractive" | "scripted", shown to users

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Yield text deltas of an answer that cites `sources` as [n]; never called without sources."""
        ...

    def complete(self, system: str, prompt: str) -> str | None:
        """Free-form text for helper tasks (`system` may be empty); None when the provider cannot."""
        ...

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON object shaped by `schema` (a JSON Schema), for structured helper tasks (research plans,
        sufficiency checks); None when the provider cannot, or what it wrote holds no JSON object."""
        ...


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call while answering: its name, what it does, its JSON-schema arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class Tools(Protocol):
    """What a tool-calling answer may use (seed evidence-retention.md 2.5: search_local, search_web)."""

    specs: Sequence[ToolSpec]
    max_calls: int  # function calls per answer; past it the model must answer with what it has

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        """Run one call; the text the model reads back (its sources numbered [n] for citation)."""
        ...


@runtime_checkable
class ToolCallingLLM(Protocol):
    """An LLM that can search on its own while answering (assist mode)."""

    def answer_with_tools(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn],
        tools: Tools,
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Like answer(), but the model may call `tools` first (at most tools.max_calls times)."""
        ...
