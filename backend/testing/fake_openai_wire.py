"""The bodies an OpenAI-compatible server sends, as the fake server renders them: a chat completion, the
same reply as SSE chunks (text in pieces, tool calls as deltas of fragments, usage on a last chunk with
no choices when the client asked for it, then `data: [DONE]`), embeddings and error objects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CREATED = 1_700_000_000  # a fixed timestamp: replies are reproducible


@dataclass(frozen=True)
class Message:
    """What the fake model says once: text (streamed in `pieces`), or tool calls (name, arguments)."""

    pieces: tuple[str, ...] = ()
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    total_tokens: int | None = None
    finish_reason: str = "stop"
    extra_events: tuple[str, ...] = field(default=())  # raw SSE data lines sent after the pieces

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def completion(message: Message, model: str) -> dict[str, Any]:
    """A non-streamed chat.completion object."""
    reply: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    finish = message.finish_reason
    if message.tool_calls:
        reply["tool_calls"] = [_call(i, name, args) for i, (name, args) in enumerate(message.tool_calls)]
        finish = "tool_calls"
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
    }
    if message.total_tokens is not None:
        body["usage"] = _usage(message.total_tokens)
    return body


def stream(message: Message, model: str, *, include_usage: bool) -> bytes:
    """The SSE body of a streamed reply."""
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    chunks += [_chunk(model, {"content": piece}) for piece in message.pieces]
    for i, (name, args) in enumerate(message.tool_calls):
        arguments = json.dumps(args, ensure_ascii=False)
        half = len(arguments) // 2
        head = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append(_chunk(model, {"tool_calls": [head]}))
        for part in (arguments[:half], arguments[half:]):  # arguments arrive as JSON text in fragments
            chunks.append(_chunk(model, {"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    finish = "tool_calls" if message.tool_calls else message.finish_reason
    chunks.append(_chunk(model, {}, finish))
    lines = [json.dumps(c, ensure_ascii=False) for c in chunks] + list(message.extra_events)
    if include_usage and message.total_tokens is not None:
        usage = {**_chunk(model, {}), "choices": [], "usage": _usage(message.total_tokens)}
        lines.append(json.dumps(usage))
    lines.append("[DONE]")
    return "".join(f"data: {line}\n\n" for line in lines).encode()


def embeddings(vectors: Sequence[Sequence[float]], model: str, tokens: int) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)]
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def error(message: str, *, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _call(index: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(args, ensure_ascii=False)
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _usage(total: int) -> dict[str, int]:
    prompt = total * 3 // 4
    return {"prompt_tokens": prompt, "completion_tokens": total - prompt, "total_tokens": total}
