"""Budgets stop a run that would otherwise never end: a scripted model that never says "sufficient"."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.testing import ScriptedLLM
from tests.test_research_api import DOCS

SECTIONS = [
    {"title": "防守", "question": "黑豹队的防守丢了多少分？", "queries": ["黑豹队 失分"]},
    {"title": "考拉", "question": "考拉每天睡多久？", "queries": ["考拉 睡眠"]},
]
QUESTION = "黑豹队的防守丢了多少分？考拉每天睡多久？"


def never_sufficient(delay_s: float = 0.0) -> Callable[[str, str, dict], dict]:
    """Plans two sections, then always asks for one more (new) search."""
    counter = itertools.count()

    def reply(system: str, prompt: str, schema: dict) -> dict:
        if "You plan a research report" in prompt:
            return {"sections": SECTIONS}
        time.sleep(delay_s)
        return {"sufficient": False, "missing": "更多细节", "gap_queries": [f"更多细节 第{next(counter)}条"]}

    return reply


@pytest.fixture
def run(make_services) -> Iterator[Callable[..., dict]]:
    clients: list[TestClient] = []

    def research(llm: ScriptedLLM, preset: str = "comprehensive", **settings: Any) -> dict:
        client = TestClient(create_app(services=make_services(llm=llm, **settings)))
        client.__enter__()
        clients.append(client)
        assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        response = client.post("/research", json={"question": QUESTION, "preset": preset})
        assert response.status_code == 200, response.text
        body = response.json()
        stored = client.get(f"/research/{body['run_id']}").json()
        assert (stored["status"], stored["partial"]) == ("completed", body["partial"])
        assert stored["stop_reasons"] == body["partial_reasons"]
        return body

    yield research
    for client in clients:
        client.__exit__(None, None, None)


def test_max_loops_ends_a_section_the_model_never_finds_sufficient(run):
    llm = ScriptedLLM(json_completions=never_sufficient())
    body = run(llm, research_max_loops=2)
    sections = body["diagnostics"]["sections"]
    assert [(s["rounds"], s["stop_reason"], s["sufficient"]) for s in sections] == [
        (2, "max_loops", False)
    ] * 2
    assert all(len(s["sufficiency"]) == 3 for s in sections)  # after round 0, 1 and 2
    assert body["partial"] is False  # no budget ran out: the sections say they are insufficient
    # plan, three verdicts per section, one global verify over the chain (it sends no gap), writing
    assert body["diagnostics"]["budget"]["used"]["model_calls"] == 1 + 2 * 3 + 1 + 2
    assert [v["method"] for v in body["diagnostics"]["chain"]["verify"]] == ["llm"]
    assert body["generator"] == "scripted"


def test_the_search_budget_stops_the_run_and_marks_the_report_partial(run):
    llm = ScriptedLLM(json_completions=never_sufficient())
    body = run(llm, research_max_loops=5, research_comprehensive_max_searches=6)
    d = body["diagnostics"]
    assert (body["partial"], body["partial_reasons"]) == (True, ["max_searches"])
    assert d["budget"]["used"]["searches"] == 6
    assert {s["stop_reason"] for s in d["sections"]} == {"budget: max_searches"}
    assert body["report"].splitlines()[2].startswith("> 注意：本报告不完整（已达到检索次数上限）")
    assert all(s["content"] for s in body["sections"])  # written from what was found


def test_the_model_call_budget_keeps_a_call_per_section_for_writing(run):
    llm = ScriptedLLM(json_completions=never_sufficient())
    body = run(llm, research_max_loops=5, research_comprehensive_max_model_calls=5)
    d = body["diagnostics"]
    assert body["partial_reasons"] == ["max_model_calls"]
    assert d["budget"]["used"]["model_calls"] == 5  # plan, two verdicts, then the two sections
    assert [s["write"]["generator"] for s in d["sections"]] == ["scripted", "scripted"]
    assert len(llm.calls) == 2


def test_the_token_budget_counts_estimates_and_falls_back_to_extractive_writing(run):
    llm = ScriptedLLM(json_completions=never_sufficient())
    body = run(llm, research_max_loops=5, research_comprehensive_max_tokens=1000)
    d = body["diagnostics"]
    assert "max_tokens" in body["partial_reasons"]
    used = d["budget"]["used"]
    assert used["tokens"] >= 1000
    assert used["tokens_estimated"] == used["tokens"]  # a scripted model reports no usage
    assert {s["write"]["generator"] for s in d["sections"]} == {"extractive"}
    assert {s["write"]["fallback_reason"] for s in d["sections"]} == {"budget: max_tokens"}
    assert llm.calls == []  # not one section was handed to the model


def test_the_deadline_stops_research_and_still_writes_in_time(run):
    llm = ScriptedLLM(json_completions=never_sufficient(delay_s=0.3))
    started = time.perf_counter()
    body = run(llm, research_max_loops=5, research_comprehensive_deadline_s=1.5)
    elapsed = time.perf_counter() - started
    assert body["partial_reasons"] == ["deadline"]
    assert elapsed < 1.5 + 2.0  # the run's deadline, plus ingest and HTTP around it
    assert body["diagnostics"]["timings"]["total_ms"] < 1500 + 500
    assert all(s["content"] for s in body["sections"])
