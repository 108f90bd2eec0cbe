"""/research with Gemini, against a local fake of the Gemini API: structured plans and verdicts, cited
sections, and the fallbacks when the model writes malformed JSON or does not answer in time."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.config import Settings
from backend.llm import GeminiLLM
from tests.fake_gemini import gemini_response, stream_body
from tests.fake_http import serve
from tests.test_research_api import DOCS

PLAN = {
    "sections": [
        {
            "title": "**黑豹队的防守**",
            "question": "黑豹队的防守丢了多少分？",
            "queries": ["黑豹队 防守 失分"],
        },
        {"title": "考拉的睡眠", "question": "考拉每天睡多久？", "queries": ["1. 考拉 睡眠 时间"]},
    ]
}


class FakeResearchGemini:
    """Answers the three kinds of research calls by what they ask: plan, sufficiency, section writing."""

    def __init__(self) -> None:
        self.plan: Callable[[], str] = lambda: (
            f"好的，计划如下：\n```json\n{json.dumps(PLAN, ensure_ascii=False)}\n```"
        )
        self.verdict: Callable[[], str] = lambda: '{"sufficient": true, "missing": "", "gap_queries": []}'
        self.answer: Callable[[], str] = lambda: '{"answer": "308分", "found": true}'
        self.delay_s = 0.0
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()

    def respond(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        with self.lock:
            self.requests.append((path, body))
        time.sleep(self.delay_s)
        prompt = body["contents"][-1]["parts"][0]["text"]
        if ":streamGenerateContent" in path:
            ids = re.findall(r'^<source n="(\d+)">', prompt, flags=re.MULTILINE)
            # Cites its first source, and a source it was not given (to be dropped).
            text = f"根据资料，答案见此[{ids[0]}]，另见[999]。"
            return 200, stream_body(text, total_tokens=200).encode(), "text/event-stream"
        if "You plan a research report" in prompt:
            reply = self.plan()
        else:
            reply = self.answer() if "short final answer" in prompt else self.verdict()
        return 200, json.dumps(gemini_response(reply, total_tokens=100)).encode(), "application/json"

    def kinds(self) -> list[str]:
        out = []
        for path, body in self.requests:
            prompt = body["contents"][-1]["parts"][0]["text"]
            if ":streamGenerateContent" in path:
                out.append("write")
            else:
                out.append("plan" if "You plan a research report" in prompt else "judge")
        return out


@pytest.fixture
def fake() -> FakeResearchGemini:
    return FakeResearchGemini()


@pytest.fixture
def make_client(make_services, fake) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []
    with serve(fake.respond) as url:

        def make(**overrides: Any) -> TestClient:
            values = {"gemini_api_key": "test-key", "gemini_base_url": url, "llm_max_retries": 0, **overrides}
            llm = GeminiLLM(Settings(_env_file=None, **values), backoff_s=0.001)
            services = make_services(llm=llm, **values)
            client = TestClient(create_app(services=services))
            client.__enter__()
            clients.append(client)
            assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
            return client

        yield make
        for client in clients:
            client.__exit__(None, None, None)


def research(client: TestClient, question: str, **kw: Any) -> dict:
    response = client.post("/research", json={"question": question, **kw})
    assert response.status_code == 200, response.text
    return response.json()


def test_gemini_plans_judges_and_writes_a_cited_report(make_client, fake):
    body = research(make_client(), "黑豹队的防守怎么样？考拉的作息呢？")
    d = body["diagnostics"]
    assert d["plan_method"] == "llm"
    assert [s["title"] for s in body["sections"]] == ["黑豹队的防守", "考拉的睡眠"]  # markdown stripped
    assert d["sections"][1]["searches"][1]["query"] == "考拉 睡眠 时间"  # numbering stripped
    assert body["generator"] == "gemini"
    assert d["llm"] == "gemini-2.5-flash"
    assert all(s["sufficiency"][0]["method"] == "llm" for s in d["sections"])
    assert all(s["sufficient"] for s in d["sections"])
    # [999] named no source the section was given: dropped; the rest renumbered from 1.
    assert "[999]" not in body["report"]
    assert all(s["write"]["citations_removed"] == 1 for s in d["sections"])
    assert [s["source_numbers"] for s in body["sections"]] == [[1], [2]]
    assert [s["external_id"] for s in body["sources"]] == ["panthers", "koala"]
    assert sorted(fake.kinds()) == ["judge", "judge", "plan", "write", "write"]
    # Tokens as Gemini counted them: 100 per plan and verdict, 200 per section.
    assert d["budget"]["used"]["model_calls"] == 5
    assert d["budget"]["used"]["tokens"] == 100 + 2 * 100 + 2 * 200
    assert d["budget"]["used"]["tokens_estimated"] == 0
    plan_request = next(b for p, b in fake.requests if "You plan" in b["contents"][-1]["parts"][0]["text"])
    assert plan_request["generationConfig"]["responseMimeType"] == "application/json"
    assert "sections" in plan_request["generationConfig"]["responseJsonSchema"]["properties"]


def test_a_model_that_asks_for_more_gets_gap_searches_it_has_not_run(make_client, fake):
    verdicts = iter(
        [
            '{"sufficient": false, "missing": "赛季", "gap_queries": ["黑豹队 2015赛季 防守排名"]}',
            '{"sufficient": false, "missing": "x", "gap_queries": ["黑豹队 2015赛季 防守排名"]}',
        ]
    )
    fake.plan = lambda: json.dumps({"sections": [PLAN["sections"][0]]}, ensure_ascii=False)
    fake.verdict = lambda: next(verdicts)
    body = research(make_client(), "黑豹队的防守丢了多少分？", preset="comprehensive")
    section = body["diagnostics"]["sections"][0]
    gap_searches = [s for s in section["searches"] if s["pool_source"] == "eval_supplement"]
    assert [s["query"] for s in gap_searches] == ["黑豹队 2015赛季 防守排名"]
    assert section["stop_reason"] == "no new queries"  # the repeated proposal was not searched again
    judge_prompts = [b["contents"][-1]["parts"][0]["text"] for p, b in fake.requests if "You check" in str(b)]
    assert "- 黑豹队 2015赛季 防守排名" in judge_prompts[1]  # told what was already searched


@pytest.mark.parametrize(
    "plan",
    [
        "Here is my plan: first look at the defense, then at koalas.",
        '{"sections": "two"}',
        '{"sections": [{"title": "", "question": "", "queries": []}]}',
        '```json\n{"sections": [{"title": "x", "question": \n```',
    ],
)
def test_a_malformed_plan_falls_back_to_the_heuristic_plan(make_client, fake, plan):
    fake.plan = lambda: plan
    body = research(make_client(), "黑豹队的防守丢了多少分？另外，考拉每天睡多久？")
    d = body["diagnostics"]
    assert d["plan_method"] == "heuristic"
    assert "malformed" in d["plan_fallback_reason"]
    assert [s["question"] for s in body["sections"]] == ["黑豹队的防守丢了多少分？", "考拉每天睡多久？"]
    assert body["generator"] == "gemini"


def test_a_model_that_does_not_answer_in_time_degrades_to_heuristics_and_extractive_writing(
    make_client, fake
):
    fake.delay_s = 1.5
    client = make_client(research_model_timeout_s=0.2, llm_timeout_s=1.0)
    started = time.perf_counter()
    body = research(client, "黑豹队的防守丢了多少分？另外，考拉每天睡多久？")
    assert time.perf_counter() - started < 10
    d = body["diagnostics"]
    assert (d["plan_method"], d["plan_fallback_reason"]) == ("heuristic", "timeout")
    assert all(v["method"] == "heuristic" for s in d["sections"] for v in s["sufficiency"])
    assert {v["model_failure"] for s in d["sections"] for v in s["sufficiency"]} == {"timeout"}
    assert body["generator"] == "extractive"
    assert {s["write"]["fallback_reason"] for s in d["sections"]} == {"timeout"}
    assert "308" in body["sections"][0]["content"]
    assert body["partial"] is False


def test_gemini_reflects_rates_evidence_and_formats_the_short_answer(make_client, fake):
    fake.plan = lambda: json.dumps({"sections": [PLAN["sections"][0]]}, ensure_ascii=False)
    fake.verdict = lambda: json.dumps(
        {
            "sufficient": True,
            "missing": "",
            "gap_queries": [],
            "established": ["黑豹队2015赛季丢了308分"],
            "entities": ["卡罗莱纳黑豹队"],
            "evidence": [{"id": 1, "statement": "2015赛季只丢308分", "reliability": "high"}],
        },
        ensure_ascii=False,
    )
    body = research(make_client(), "黑豹队的防守丢了多少分？")
    section = body["diagnostics"]["sections"][0]
    reflection = section["reflections"][0]
    assert (reflection["method"], reflection["established"]) == ("llm", ["黑豹队2015赛季丢了308分"])
    assert section["entity_checks"][0]["status"] == "skipped"  # no encyclopedia provider here
    [record] = [r for r in section["evidence_records"] if r["id"] == 1]
    assert (record["statement"], record["method"]) == ("2015赛季只丢308分", "llm")
    assert body["short_answer"] == "308分"
    assert body["report"].splitlines()[2] == "**答案：** 308分"
    judge = next(b for p, b in fake.requests if "reflect on it" in b["contents"][-1]["parts"][0]["text"])
    assert "entities" in judge["generationConfig"]["responseJsonSchema"]["properties"]


def test_a_malformed_gemini_answer_line_falls_back_to_extraction(make_client, fake):
    fake.plan = lambda: json.dumps({"sections": [PLAN["sections"][0]]}, ensure_ascii=False)
    fake.answer = lambda: "The answer is probably 308 points."
    body = research(make_client(), "黑豹队的防守丢了多少分？")
    answer = body["diagnostics"]["answer"]
    assert (answer["method"], answer["model_failure"]) == ("heuristic", "malformed output (no JSON object)")
    assert body["short_answer"] == "308分"


def test_the_models_plan_names_each_sections_engine_and_an_unknown_one_is_replaced(make_client, fake):
    sections = [dict(PLAN["sections"][0], engine="serper"), dict(PLAN["sections"][1], engine="google")]
    fake.plan = lambda: json.dumps({"sections": sections}, ensure_ascii=False)
    body = research(make_client(), "黑豹队的防守怎么样？考拉的作息呢？")
    first, second = body["diagnostics"]["sections"]
    assert (first["engine"], first["engine_reason"]) == ("serper", "the plan's model chose it")
    assert second["engine"] == "bocha"  # the routing rule for a Chinese question
    assert "unknown engine 'google'" in second["engine_reason"]
    plan_request = next(b for p, b in fake.requests if "You plan" in b["contents"][-1]["parts"][0]["text"])
    schema = plan_request["generationConfig"]["responseJsonSchema"]
    assert "baike" in schema["properties"]["sections"]["items"]["properties"]["engine"]["enum"]
