"""A scripted LLM for tests: canned answers and completions, every call recorded for assertions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from backend.llm.base import Sampling, SourceText, Turn
from backend.llm.parsing import parse_json

AnswerScript = Callable[[str, Sequence[SourceText], Sequence[Turn]], str]
CompleteScript = Callable[[str, str], str | None]
# A structured completion: a dict, or text read the way a provider's reply is (JSON found in prose).
JsonReply = dict[str, Any] | str | None
JsonScript = Callable[[str, str, dict[str, Any]], JsonReply]


@dataclass(frozen=True)
class AnswerCall:
    """The arguments of one answer() call."""

    question: str
    sources: tuple[SourceText, ...]
    history: tuple[Turn, ...]
    sampling: Sampling | None = None


@dataclass(frozen=True)
class CompleteCall:
    """The arguments of one complete() call."""

    system: str
    prompt: str


@dataclass(frozen=True)
class JsonCall:
    """The arguments of one complete_json() call."""

    system: str
    prompt: str
    schema: dict[str, Any]


@dataclass
class ScriptedLLM:
    """Plays back `answers` (strings, or exceptions to raise) in order, repeating the last one;
    `complete()` does the same with `completions`, and returns None when none were given;
    `complete_json()` with `json_completions` (dicts, or text parsed as a provider's reply is)."""

    answers: Sequence[str | Exception] | AnswerScript = ()
    completions: Sequence[str | None | Exception] | CompleteScript = ()
    json_completions: Sequence[JsonReply | Exception] | JsonScript = ()
    delta_chars: int = 5  # answers stream in pieces this long, so [n] markers may span deltas
    name: str = "scripted"
    generator: str = "scripted"
    calls: list[AnswerCall] = field(default_factory=list)
    complete_calls: list[CompleteCall] = field(default_factory=list)
    json_calls: list[JsonCall] = field(default_factory=list)

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Record the call, then yield the scripted answer in several deltas."""
        self.calls.append(AnswerCall(question, tuple(sources), tuple(history), sampling))
        return self._stream(len(self.calls), question, sources, history)

    def complete(self, system: str, prompt: str) -> str | None:
        """Record the call and return the scripted completion (None when none were given)."""
        self.complete_calls.append(CompleteCall(system, prompt))
        if callable(self.completions):
            return self.completions(system, prompt)
        answer: str | None = _next(self.completions, len(self.complete_calls))
        return answer

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Record the call and return the scripted object (text is parsed; no JSON object: None)."""
        self.json_calls.append(JsonCall(system, prompt, schema))
        if callable(self.json_completions):
            reply = self.json_completions(system, prompt, schema)
        else:
            script = self.json_completions
            reply = _next(script, len(self.json_calls)) if script else None
        if isinstance(reply, str):
            try:
                reply = parse_json(reply)
            except ValueError:
                return None
        return reply if isinstance(reply, dict) else None

    def _stream(
        self, call_number: int, question: str, sources: Sequence[SourceText], history: Sequence[Turn]
    ) -> Iterator[str]:
        # Resolved on first iteration, so a scripted exception surfaces where a provider's would.
        if callable(self.answers):
            text = self.answers(question, sources, history)
        else:
            scripted = _next(self.answers, call_number)
            text = _default_answer(sources) if scripted is None else scripted
        step = max(1, self.delta_chars)
        for start in range(0, len(text), step):
            yield text[start : start + step]


def citing_first(text: str) -> AnswerScript:
    """An answer script: `text` with "{n}" as the number of the first source the model is given. Research
    numbers a section's sources by evidence id, in the order its concurrent searches returned, so a
    fixed "[1]" may name no source of that section and be dropped as unsupported."""
    return lambda question, sources, history: text.replace("{n}", str(sources[0].n) if sources else "1")


def _next(script: Sequence[Any], call_number: int) -> Any:
    if not script:
        return None
    item = script[min(call_number, len(script)) - 1]
    if isinstance(item, Exception):
        raise item
    return item


def _default_answer(sources: Sequence[SourceText]) -> str:
    return f"Scripted answer [{sources[0].n}]." if sources else "Scripted answer."
