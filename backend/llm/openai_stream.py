"""Reading chat completions as OpenAI-compatible servers send them: message text and usage of a reply,
the deltas of a streamed one (text, tool-call fragments), and reasoning models' <think> blocks removed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from backend.llm.openai_client import UpstreamError

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_OPEN, _CLOSE = "<think>", "</think>"


def message_text(reply: dict[str, Any], label: str) -> str:
    """The text of a non-streamed reply (choices[0].message.content), without a leading <think> block;
    UpstreamError when the reply is not a chat completion."""
    choices = reply.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise UpstreamError(
            f"{label} answered with JSON that is not a chat completion (no choices[0].message)",
            kind="malformed",
        )
    content = message.get("content")
    return strip_think(content) if isinstance(content, str) else ""


def total_tokens(payload: dict[str, Any]) -> int | None:
    """usage.total_tokens of a reply or of a stream's last event (None when the server sent none)."""
    usage = payload.get("usage")
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def first_choice(event: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(delta, finish_reason) of a stream event's first choice; ({}, None) for a usage-only event."""
    choices = event.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        return {}, None
    delta = choice.get("delta")
    reason = choice.get("finish_reason")
    return (delta if isinstance(delta, dict) else {}), (reason if isinstance(reason, str) else None)


def strip_think(text: str) -> str:
    """`text` without the leading <think>...</think> of a reasoning model (Qwen3, DeepSeek-R1 on vLLM)."""
    return _THINK.sub("", text, count=1)


class ThinkFilter:
    """Streamed text with a leading <think>...</think> block dropped (the rest passes unchanged)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._state = "start"  # start -> thinking -> after -> through

    def feed(self, text: str) -> str:
        """The part of `text` to show now (held back while it may still open or be a think block)."""
        if self._state == "through":
            return text
        self._buffer += text
        if self._state == "start":
            head = self._buffer.lstrip()
            if len(head) < len(_OPEN) and _OPEN.startswith(head):
                return ""  # nothing yet, or the start of "<think>"
            if not head.startswith(_OPEN):
                return self._release()
            self._state = "thinking"
        if self._state == "thinking":
            end = self._buffer.find(_CLOSE)
            if end < 0:
                return ""
            self._buffer = self._buffer[end + len(_CLOSE) :]
            self._state = "after"
        self._buffer = self._buffer.lstrip()  # the blank lines after </think>
        return self._release() if self._buffer else ""

    def flush(self) -> str:
        """What is still held at the end of the stream (an unfinished think block shows nothing)."""
        return "" if self._state == "thinking" else self._release()

    def _release(self) -> str:
        text, self._buffer, self._state = self._buffer, "", "through"
        return text


@dataclass
class ToolCall:
    """One function call the model asked for: its id (to answer it), name and JSON arguments text."""

    id: str
    name: str = ""
    arguments: str = ""


@dataclass
class ToolCalls:
    """Tool calls assembled from a stream's deltas: fragments of one call share its `index`."""

    by_index: dict[int, ToolCall] = field(default_factory=dict)

    def add(self, fragments: Any) -> None:
        for position, fragment in enumerate(fragments if isinstance(fragments, list) else []):
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index")
            index = index if isinstance(index, int) else position
            call = self.by_index.setdefault(index, ToolCall(id=f"call_{index}"))
            if isinstance(fragment.get("id"), str) and fragment["id"]:
                call.id = fragment["id"]
            function = fragment.get("function")
            if isinstance(function, dict):
                call.name += function.get("name") or ""
                # Servers send the arguments as JSON text in pieces; a few send a whole object.
                arguments = function.get("arguments")
                call.arguments += arguments if isinstance(arguments, str) else _as_json(arguments)

    @property
    def calls(self) -> list[ToolCall]:
        return [self.by_index[i] for i in sorted(self.by_index) if self.by_index[i].name]


def _as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value is not None else ""
