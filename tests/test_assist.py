"""Assist mode (seed evidence-retention.md 2.5): Gemini may call search_local / search_web while it
answers; what it finds is numbered after the evidence pack, cited [n] and stored like any source.
The model is the local fake Gemini server; the web is the local fake provider."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.config import Settings
from backend.llm import GeminiLLM

DOCS = [
    {"external_id": "kangaroo", "title": "尤金袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"},
    {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"},
]


def gemini_client(make_services, fake_gemini, **overrides) -> TestClient:
    settings = Settings(
        _env_file=None, gemini_api_key="test-key", gemini_base_url=fake_gemini.url, llm_max_retries=0
    )
    services = make_services(
        llm=GeminiLLM(settings, backoff_s=0.001),
        chat_gap_supplement_enabled=False,  # no gap-query generation: the fake's replies are the answer's
        **overrides,
    )
    client = TestClient(create_app(services=services))
    client.__enter__()
    assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
    return client


def test_a_chunk_the_model_finds_with_search_local_is_cited_and_stored(make_services, fake_gemini):
    client = gemini_client(make_services, fake_gemini, local_top_k=1, step_top_k=1)
    fake_gemini.reply_function_call("search_local", {"query": "考拉 吃 什么"})
    fake_gemini.reply_text("尤金袋鼠分布在澳洲南部[1]，考拉以桉树叶为食[2]。")
    body = client.post("/chat", json={"message": "尤金袋鼠分布在哪里？考拉吃什么？"}).json()

    calls = body["diagnostics"]["tool_calls"]
    assert [(c["tool"], c["query"]) for c in calls] == [("search_local", "考拉 吃 什么")]
    assert 2 in calls[0]["sources"]
    by_n = {s["n"]: s for s in body["sources"]}
    assert by_n[2]["external_id"] == "koala"
    assert by_n[2]["cited"] is True
    assert body["answer"].endswith("[2]。")
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert [s["external_id"] for s in stored["sources"]] == [s["external_id"] for s in body["sources"]]

    first, second = (json.dumps(r[1], ensure_ascii=False) for r in fake_gemini.requests[:2])
    assert "search_local" in first  # the tools were declared
    assert "functionResponse" in second
    read_back = second[second.index("functionResponse") :]  # JSON: the block's quotes and lines escaped
    assert '<source n=\\"2\\">\\n考拉' in read_back  # the model read the chunk back with the number it cites


def test_the_call_budget_ends_in_an_answer_with_no_more_calls(make_services, fake_gemini, fake_web):
    client = gemini_client(
        make_services,
        fake_gemini,
        chat_assist_max_calls=2,
        web_search_provider="tavily",
        tavily_api_key=fake_web.api_key,
        tavily_base_url=fake_web.base_url,
        web_allow_private_addresses=True,
        web_deep_read_top_n=0,
    )
    fake_gemini.reply_function_call("search_web", {"query": "大熊猫 竹子"})
    fake_gemini.reply_function_call("search_local", {"query": "熊猫"})
    fake_gemini.reply_stream("大熊猫每天吃竹子[2]。")
    body = client.post("/chat", json={"message": "尤金袋鼠分布在哪里？", "web": "auto"}).json()
    assert [c["tool"] for c in body["diagnostics"]["tool_calls"]] == ["search_web", "search_local"]
    assert fake_web.count("/search") == 1  # the model's own web search
    web = [s for s in body["sources"] if s["kind"] == "web"]
    assert web
    assert web[0]["url"].startswith(fake_web.base_url)
    last_path, last_body, _ = fake_gemini.requests[-1]
    assert last_path.endswith(":streamGenerateContent?alt=sse")
    assert last_body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"


def test_without_a_function_calling_model_there_are_no_tools(client):
    client.post("/documents/batch", json={"documents": DOCS})
    body = client.post("/chat", json={"message": "考拉吃什么？"}).json()
    assert body["diagnostics"]["tool_calls"] == []
