"""A chat model behind an OpenAI-compatible API (POST {OPENAI_BASE_URL}/chat/completions): DeepSeek,
Qwen through DashScope's compatible mode, vLLM, Ollama, ... Everything GeminiLLM does: streamed cited
answers, completions, structured output, assist-mode tool calls, token usage, retries.

Servers differ in what they accept, so three options are tried and, when a server refuses one with a
4xx, dropped for the rest of the process (per base URL and model): `response_format` json_schema, then
json_object, then plain text read leniently (OPENAI_STRUCTURED_OUTPUT pins one); `stream_options`
(usage of streamed answers); `tools` (a server without function calling answers without them).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from backend.config import Settings
from backend.errors import ProviderError
from backend.llm.base import Sampling, SourceText, Tools, ToolSpec, Turn
from backend.llm.openai_client import OpenAIClient, UpstreamError
from backend.llm.openai_stream import (
    ThinkFilter,
    ToolCall,
    ToolCalls,
    first_choice,
    message_text,
    total_tokens,
)
from backend.llm.parsing import parse_json
from backend.llm.prompts import format_sources, load_prompt
from backend.llm.usage import report_tokens

log = logging.getLogger(__name__)

Structured = Literal["json_schema", "json_object", "text"]
_STEP_DOWN: dict[Structured, Structured | None] = {
    "json_schema": "json_object",
    "json_object": "text",
    "text": None,
}
_REFUSED = frozenset({400, 422})  # how servers refuse an option they do not know (never 429, 5xx)
PATH = "chat/completions"


@dataclass
class ServerTraits:
    """What one server + model was found to refuse; remembered for the process."""

    structured: Structured = "json_schema"
    stream_usage: bool = True
    tools: bool = True


_traits: dict[tuple[str, str], ServerTraits] = {}
_traits_lock = threading.Lock()


def server_traits(base_url: str, model: str) -> ServerTraits:
    """The process's record of `model` at `base_url` (shared by every instance: the WhereBuilder's too)."""
    with _traits_lock:
        return _traits.setdefault((base_url, model), ServerTraits())


def forget_server_traits() -> None:
    """Forget what servers refused (tests start each server fresh)."""
    with _traits_lock:
        _traits.clear()


class OpenAICompatibleLLM:
    """Answers and completions from OPENAI_MODEL at OPENAI_BASE_URL."""

    generator = "openai_compatible"

    def __init__(
        self,
        settings: Settings,
        *,
        client: OpenAIClient | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
    ) -> None:
        self.name = settings.openai_model.strip()
        base_url = settings.openai_base_url.strip().rstrip("/")
        if not base_url or not self.name:
            raise ProviderError("LLM_PROVIDER=openai_compatible needs OPENAI_BASE_URL and OPENAI_MODEL")
        self._pinned = settings.openai_structured_output
        self._traits = server_traits(base_url, self.name)
        self._client = client or OpenAIClient(
            base_url,
            settings.openai_key,
            label=f"the model {self.name} at {base_url}",
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            timeout_setting="LLM_TIMEOUT_S",
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
        )
        self._label = self._client.label
        self._system = load_prompt("answer_system").render()

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Stream an answer grounded in `sources`, citing them as [n]."""
        return self._stream(self._answer_messages(question, sources, history), sampling=sampling)

    def answer_with_tools(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn],
        tools: Tools,
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Assist mode: the model may call `tools` before it answers (at most tools.max_calls calls);
        each round streams, and the first text delta of a round makes it the answer."""
        if not self._traits.tools:
            yield from self.answer(question, sources, history, sampling)
            return
        messages = self._answer_messages(question, sources, history)
        declared = [_declaration(spec) for spec in tools.specs]
        calls_made = 0
        while calls_made < tools.max_calls:
            found = ToolCalls()
            try:
                answered = yield from self._stream_round(messages, declared, "auto", found, sampling)
            except UpstreamError as exc:
                if calls_made or exc.status not in _REFUSED:
                    raise
                log.warning("%s refused function calling (%s); answering without tools", self._label, exc)
                self._traits.tools = False
                yield from self.answer(question, sources, history, sampling)
                return
            if answered:
                return
            calls = found.calls[: tools.max_calls - calls_made]
            if not calls:
                break
            asked = [_call_json(call) for call in calls]
            messages.append({"role": "assistant", "content": "", "tool_calls": asked})
            for call in calls:
                result = tools.call(call.name, _arguments(call))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            calls_made += len(calls)
        # The call budget is spent (or the model stopped without text): it answers from what it has,
        # the tools still declared (the history holds its calls) but no more calls allowed.
        yield from self._stream(messages, declared, "none", sampling=sampling)

    def complete(self, system: str, prompt: str) -> str | None:
        """One non-streamed generation; None when the model returned no text."""
        reply = self._client.post(PATH, {"model": self.name, "messages": _messages(system, prompt)})
        report_tokens(total_tokens(reply))
        return message_text(reply, self._label).strip() or None

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON object shaped by `schema`: asked for with the strongest response_format the server
        takes, the schema always in the instructions too; what it wrote is parsed leniently (fences and
        prose ignored); None when it holds no object."""
        instruction = load_prompt("json_reply").render(schema=json.dumps(schema, ensure_ascii=False))
        messages = _messages(f"{system}\n\n{instruction}" if system else instruction, prompt)
        mode: Structured = self._traits.structured if self._pinned == "auto" else self._pinned
        first = mode
        while True:
            body = {"model": self.name, "messages": messages, **_response_format(mode, schema)}
            try:
                reply = self._client.post(PATH, body)
                break
            except UpstreamError as exc:
                lower = _STEP_DOWN[mode]
                if self._pinned != "auto" or lower is None or exc.status not in _REFUSED:
                    raise
                log.warning("%s refused response_format %s (%s); trying %s", self._label, mode, exc, lower)
                mode = lower
        if mode != first:
            self._traits.structured = mode  # a lower mode worked where the higher one was refused
        report_tokens(total_tokens(reply))
        text = message_text(reply, self._label)
        try:
            value = parse_json(text)
        except ValueError:
            log.warning("%s returned no JSON object: %.200r", self._label, text)
            return None
        return value if isinstance(value, dict) else None

    def close(self) -> None:
        self._client.close()

    def _answer_messages(
        self, question: str, sources: Sequence[SourceText], history: Sequence[Turn]
    ) -> list[dict[str, Any]]:
        prompt = load_prompt("answer_user").render(question=question, sources=format_sources(sources))
        earlier = [
            {"role": "assistant" if turn.role == "assistant" else "user", "content": turn.content}
            for turn in history
            if turn.content.strip()
        ]
        return [{"role": "system", "content": self._system}, *earlier, {"role": "user", "content": prompt}]

    def _stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        *,
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """The text of one streamed completion; ProviderError when there is none."""
        answered = yield from self._stream_round(messages, tools, tool_choice, None, sampling)
        if not answered:
            raise ProviderError(f"{self._label} returned no text")

    def _stream_round(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        found: ToolCalls | None,
        sampling: Sampling | None = None,
    ) -> Generator[str, None, bool]:
        """Stream one completion: text deltas are yielded, tool-call deltas (when `found` collects them
        and no text came first) assembled into `found`. Returns whether text was yielded. Retried until
        the first text is out, never after (what a user has seen cannot be taken back)."""
        body: dict[str, Any] = {"model": self.name, "messages": messages, "stream": True}
        if sampling is not None and sampling.temperature is not None:
            body["temperature"] = sampling.temperature
        if sampling is not None and sampling.max_tokens is not None:
            body["max_tokens"] = sampling.max_tokens
        if tools:
            body |= {"tools": tools, "tool_choice": tool_choice or "auto"}
        attempt = 0
        while True:
            if self._traits.stream_usage:
                body["stream_options"] = {"include_usage": True}
            else:
                body.pop("stream_options", None)
            yielded = False
            think = ThinkFilter()
            usage: int | None = None
            if found is not None:
                found.by_index.clear()
            try:
                for event in self._client.stream_once(PATH, body):
                    usage = total_tokens(event) or usage
                    delta, _ = first_choice(event)
                    if found is not None and delta.get("tool_calls") and not yielded:
                        found.add(delta["tool_calls"])
                    content = delta.get("content")
                    calling = found is not None and bool(found.by_index)
                    if isinstance(content, str) and content and not calling:
                        text = think.feed(content)
                        if text:
                            yielded = True
                            yield text
                rest = think.flush()
                if rest and not (found is not None and found.by_index):
                    yielded = True
                    yield rest
                report_tokens(usage)
                return yielded
            except UpstreamError as exc:
                if yielded:
                    raise ProviderError(f"{self._label}: the answer broke off: {exc.detail}") from exc
                if "stream_options" in body and exc.status in _REFUSED and "stream_options" in exc.detail:
                    log.warning("%s refused stream_options; streams go without usage", self._label)
                    self._traits.stream_usage = False
                    continue
                self._client.retry_or_raise(exc, attempt)
            attempt += 1


def _messages(system: str, prompt: str) -> list[dict[str, Any]]:
    head = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": prompt}]


def _response_format(mode: Structured, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_schema":
        # strict false: the schemas use keywords (minItems, optional properties) strict mode refuses.
        spec = {"name": "result", "schema": schema, "strict": False}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    function = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return {"type": "function", "function": function}


def _call_json(call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments or "{}"
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def _arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object ({} when the model wrote none or no JSON object: the tool
    then answers with an error the model reads)."""
    try:
        value = parse_json(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
