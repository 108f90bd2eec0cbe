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
    """Replies to generateContent / streamGenerateContent with queued responses and records requests."""

    def __init__(self) -> None:
        self.url = ""
        self.replies: list[tuple[int, str, str]] = []
        self.requests: list[tuple[str, dict, dict]] = []
        self.count_requests: list[str] = []  # the texts countTokens was asked about
        self.count_tokens: Callable[[str], int] = len
        self.count_status = 200  # another status: countTokens fails
        self.count_delay_s = 0.0

    def reply_text(self, text: str) -> None:
        self.replies.append((200, json.dumps(_response(text)), "application/json"))

    def reply_stream(self, *texts: str, finish: str = "STOP") -> None:
        chunks = [_response(t) for t in texts] or [_response("")]
        chunks[-1]["candidates"][0]["finishReason"] = finish
        body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
        self.replies.append((200, body, "text/event-stream"))

    def reply_function_call(self, name: str, args: dict[str, Any]) -> None:
        """The model asks to call a function (assist mode) instead of answering."""
        call = {"functionCall": {"name": name, "args": args}}
        body = {"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}]}
        self.replies.append((200, json.dumps(body), "application/json"))

    def reply_error(self, code: int, status: str, message: str) -> None:
        body = {"error": {"code": code, "message": message, "status": status}}
        self.replies.append((code, json.dumps(body), "application/json"))


def _response(text: str) -> dict:
    parts = [{"text": text}] if text else []
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}


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

    def respond(path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        if path.split("?")[0].endswith(":countTokens"):
            return _count(fake, body)
        fake.requests.append((path, body, headers))
        status, payload, content_type = fake.replies.pop(0)
        return status, payload.encode(), content_type

    with serve(respond) as url:
        fake.url = url
        yield fake
