"""A local fake of Gemini's REST API (generateContent / streamGenerateContent) for provider tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fake_http import serve


class FakeGemini:
    """Replies to generateContent / streamGenerateContent with queued responses and records requests."""

    def __init__(self) -> None:
        self.url = ""
        self.replies: list[tuple[int, str, str]] = []
        self.requests: list[tuple[str, dict, dict]] = []

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


@contextmanager
def running_fake_gemini() -> Iterator[FakeGemini]:
    """A FakeGemini serving on 127.0.0.1 (the `fake_gemini` fixture of conftest)."""
    fake = FakeGemini()

    def respond(path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        fake.requests.append((path, body, headers))
        status, payload, content_type = fake.replies.pop(0)
        return status, payload.encode(), content_type

    with serve(respond) as url:
        fake.url = url
        yield fake
