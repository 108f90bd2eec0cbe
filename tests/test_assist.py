"""Assist mode (seed evidence-retention.md 2.5): Gemini may call search_local / search_web (and
search_scholar / search_ncbi when those engines are configured) while it answers; what it finds is
numbered after the evidence pack, cited [n] and stored like any source.
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


def _academic_client(make_services, fake_gemini, fake_web, *providers: str) -> TestClient:
    from backend.testing.fake_engines import Paper

    fake_web.add_paper(
        Paper("p1", "Koala sleep and eucalyptus diet", "Koalas sleep up to 20 hours a day.", 2020, ("Lee",))
    )
    fake_web.add_paper(
        Paper(
            "p2",
            "Eucalyptus toxins in koala liver",
            "Koala liver enzymes detoxify eucalyptus.",
            2019,
            pmid="123",
        )
    )
    return gemini_client(
        make_services,
        fake_gemini,
        **fake_web.engine_settings(*providers),
        web_search_provider=None,
        web_allow_private_addresses=True,
        web_deep_read_top_n=0,
    )


def _declared(fake_gemini) -> set[str]:
    """The tools the answering request declared."""
    first = next(json.dumps(r[1]) for r in fake_gemini.requests if "functionDeclarations" in json.dumps(r[1]))
    return {t for t in ("search_local", "search_web", "search_scholar", "search_ncbi") if f'"{t}"' in first}


def test_the_model_searches_papers_with_search_scholar_and_search_ncbi(make_services, fake_gemini, fake_web):
    client = _academic_client(make_services, fake_gemini, fake_web, "serper", "semantic_scholar", "ncbi")
    fake_gemini.reply_function_call("search_scholar", {"query": "sleep hours"})
    fake_gemini.reply_function_call("search_ncbi", {"query": "liver enzymes"})
    fake_gemini.reply_text("考拉每天睡20小时[3]，肝脏能分解桉树毒素[4]。")
    body = client.post("/chat", json={"message": "考拉生活在哪里？", "web": "auto"}).json()
    assert body["diagnostics"]["route"] == "answer"
    assert _declared(fake_gemini) == {"search_local", "search_web", "search_scholar", "search_ncbi"}
    calls = body["diagnostics"]["tool_calls"]
    assert [(c["tool"], c["query"]) for c in calls] == [
        ("search_scholar", "sleep hours"),
        ("search_ncbi", "liver enzymes"),
    ]
    assert all(c["sources"] and not c.get("error") for c in calls), calls
    assert fake_web.count("/graph/v1/paper/search") == 1  # Semantic Scholar, asked by name
    assert any(r.path.endswith("esearch.fcgi") for r in fake_web.requests)  # PubMed
    urls = {s.get("url") for s in body["sources"] if s["kind"] == "web"}
    assert any(u and "/papers/p1" in u for u in urls)
    assert any(u and "123" in u for u in urls)  # the PubMed paper (pmid 123)


def test_academic_tools_are_offered_only_when_configured_and_the_web_allowed(
    make_services, fake_gemini, fake_web
):
    client = _academic_client(make_services, fake_gemini, fake_web, "serper")
    fake_gemini.reply_text("考拉生活在澳洲东部[1]。")
    assert client.post("/chat", json={"message": "考拉生活在哪里？"}).status_code == 200
    assert _declared(fake_gemini) == {"search_local", "search_web"}

    fake_gemini.requests.clear()
    client = _academic_client(make_services, fake_gemini, fake_web, "semantic_scholar")
    fake_gemini.reply_text("考拉生活在澳洲东部[1]。")
    assert client.post("/chat", json={"message": "考拉生活在哪里？", "web": False}).status_code == 200
    assert _declared(fake_gemini) == {"search_local"}


def test_malformed_tool_arguments_get_a_clear_message_not_a_500(make_services, fake_gemini, fake_web):
    client = _academic_client(make_services, fake_gemini, fake_web, "semantic_scholar", "ncbi")
    fake_gemini.reply_function_call("search_scholar", {"q": "koala"})  # the wrong key
    fake_gemini.reply_function_call("search_ncbi", {"query": 42})  # not text
    fake_gemini.reply_text("考拉生活在澳洲东部[1]。")
    response = client.post("/chat", json={"message": "考拉生活在哪里？", "web": "auto"})
    assert response.status_code == 200, response.text
    calls = response.json()["diagnostics"]["tool_calls"]
    assert [(c["tool"], c["query"], c["sources"]) for c in calls] == [
        ("search_scholar", "", []),
        ("search_ncbi", "", []),
    ]
    assert all("malformed arguments" in c["error"] for c in calls)
    assert fake_web.count("/graph/v1/paper/search") == 0
    read_back = json.dumps(fake_gemini.requests[1][1], ensure_ascii=False)
    assert 'must be a JSON object {\\"query\\"' in read_back  # the model reads what to send instead
