"""A local fake of Gemini's REST API (generateContent / streamGenerateContent, countTokens) for provider
tests. countTokens answers on its own (one token per character by default), never from the queue."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fake_http import serve


class FakeGemini:
    """Replies to generateContent / streamGenerateContent with queued responses and records requests.
    `total_tokens` puts usageMetadata on a reply (what token budgets read)."""

    def __init__(self) -> None:
        self.url = ""
        self.replies: list[tuple[int, str, str]] = []
        self.requests: list[tuple[str, dict, dict]] = []
        self.delays: dict[int, float] = {}  # reply index -> seconds to wait before sending it
        self.count_requests: list[str] = []  # the texts countTokens was asked about
        self.count_tokens: Callable[[str], int] = len
        self.count_status = 200  # another status: countTokens fails
        self.count_delay_s = 0.0

    def reply_text(self, text: str, *, total_tokens: int | None = None) -> None:
        body = json.dumps(gemini_response(text, total_tokens=total_tokens), ensure_ascii=False)
        self.replies.append((200, body, "application/json"))

    def reply_stream(self, *texts: str, finish: str = "STOP", total_tokens: int | None = None) -> None:
        body = stream_body(*texts, finish=finish, total_tokens=total_tokens)
        self.replies.append((200, body, "text/event-stream"))

    def reply_function_call(self, name: str, args: dict[str, Any]) -> None:
        """The model asks to call a function (assist mode) instead of answering."""
        call = {"functionCall": {"name": name, "args": args}}
        body = {"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}]}
        self.replies.append((200, json.dumps(body), "application/json"))

    def reply_slowly(self, seconds: float, text: str) -> None:
        """A reply sent only after `seconds` (a provider too slow for the caller's timeout)."""
        self.delays[len(self.requests) + len(self.replies)] = seconds  # the request that will get it
        self.reply_text(text)

    def reply_error(self, code: int, status: str, message: str) -> None:
        body = {"error": {"code": code, "message": message, "status": status}}
        self.replies.append((code, json.dumps(body), "application/json"))

    def respond(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        """The fake_http.serve responder: record the request, send the next queued reply (countTokens
        requests are answered from count_tokens and recorded apart)."""
        if path.split("?")[0].endswith(":countTokens"):
            return _count(self, body)
        self.requests.append((path, body, headers))
        delay = self.delays.pop(len(self.requests) - 1, 0.0)
        if delay:
            time.sleep(delay)
        status, payload, content_type = self.replies.pop(0)
        return status, payload.encode(), content_type


def gemini_response(text: str, *, total_tokens: int | None = None) -> dict[str, Any]:
    """One GenerateContentResponse as the REST API sends it (with usageMetadata when given)."""
    parts = [{"text": text}] if text else []
    response: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
    if total_tokens is not None:
        response["usageMetadata"] = {"totalTokenCount": total_tokens}
    return response


def stream_body(*texts: str, finish: str = "STOP", total_tokens: int | None = None) -> str:
    """A streamGenerateContent?alt=sse body: one data frame per text, usage on the last one."""
    chunks = [gemini_response(t) for t in texts] or [gemini_response("")]
    chunks[-1]["candidates"][0]["finishReason"] = finish
    if total_tokens is not None:
        chunks[-1]["usageMetadata"] = {"totalTokenCount": total_tokens}
    return "".join(f"data: {json.dumps(c, ensure_ascii=False)}\r\n\r\n" for c in chunks)


def _count(fake: FakeGemini, body: Any) -> tuple[int, bytes, str]:
    text = "".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
    fake.count_requests.append(text)
    time.sleep(fake.count_delay_s)
    if fake.count_status != 200:
        error = {"error": {"code": fake.count_status, "message": "count failed", "status": "UNAVAILABLE"}}
        return fake.count_status, json.dumps(error).encode(), "application/json"
    return 200, json.dumps({"totalTokens": fake.count_tokens(text)}).encode(), "application/json"


@contextmanager
def running_fake_gemini() -> Iterator[FakeGemini]:
    """A FakeGemini serving on 127.0.0.1 (the `fake_gemini` fixture of conftest)."""
    fake = FakeGemini()
    with serve(fake.respond) as url:
        fake.url = url
        yield fake
