"""The fake-model path of bench.research --web: an OpenAI-compatible fake (backend/testing/fake_openai.py)
scripted by what each research call asks. Its plan is the clauses of the question with the engine the
seed's rule names for each (so the plan's engine field travels the model path) and, for a multi-hop
step, the section whose answer it needs; its verdicts say
sufficient; its sections quote the first sentences of the first sources they were given, cited."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from backend.research.heuristic_plan import heuristic_plan
from backend.testing.fake_openai import FakeOpenAI
from backend.testing.fake_openai_wire import Message
from backend.web.routing import classify

_SOURCE = re.compile(r'<source n="(\d+)">\s*(.*?)</source>', re.DOTALL)


def _last_user(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = messages[-1]["content"] if messages else ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def script(body: dict[str, Any]) -> Message:
    """The reply to one chat completion, by the prompt it carries."""
    prompt = _last_user(body)
    if "You plan a research report" in prompt:
        question = prompt.rsplit("Question:", 1)[-1].strip()
        plan = heuristic_plan(question, max_sections=4, queries_per_section=2)
        sections = [
            {
                "title": s.title,
                "question": s.question,
                "queries": s.queries,
                "engine": classify(s.question)[1][0],
                **({"after": s.after, "bridge": s.bridge} if s.bridge else {}),
            }
            for s in plan.sections
        ]
        return Message((json.dumps({"sections": sections}, ensure_ascii=False),), total_tokens=100)
    if "You check whether the evidence" in prompt:
        verdict = {"sufficient": True, "missing": "", "gap_queries": []}
        return Message((json.dumps(verdict),), total_tokens=100)
    quoted = [f"{text.strip()[:300]}[{n}]" for n, text in _SOURCE.findall(prompt)[:2]]
    return Message(("\n".join(quoted) or "资料中没有找到答案。",), total_tokens=200)


@contextmanager
def fake_model(enabled: bool) -> Iterator[dict[str, Any]]:
    """Settings overrides for the fake model (started for the block), or none for the extractive path."""
    if not enabled:
        yield {}
        return
    with FakeOpenAI() as fake:
        fake.script = script
        yield {
            "llm_provider": "openai_compatible",
            "openai_base_url": fake.url,
            "openai_api_key": fake.api_key,
            "openai_model": fake.model,
        }
