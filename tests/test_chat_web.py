"""Chat beyond the documents, with the real local model and the fake web provider (issue 13): the
confidence decides when to search the web, web evidence is cited and stored like a chunk, a question
the documents answer costs no provider call, web=false never calls one."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.embeddings import LocalEmbedder
from backend.llm import ExtractiveLLM

pytestmark = pytest.mark.slow

DOCS = [
    {
        "external_id": "stages",
        "title": "三阶段检索",
        "content": "pgrag 的检索分为三个阶段：预取、启发式重排和动态 Top-K 截断。预取由 SQL 函数 "
        "hybrid_search 完成，它融合全文检索和向量检索的结果。",
    },
    {
        "external_id": "author",
        "title": "关于 pgrag",
        "content": "pgrag 是一个基于 PostgreSQL 的检索增强生成后端，由一个小团队开发，支持中文和英文文档。",
    },
]
OUTSIDE = "大熊猫每天吃多少公斤竹子？"  # the fake web's giant-panda page answers it; the documents do not
INSIDE = "pgrag 的检索分为哪三个阶段？"


@pytest.fixture(scope="module")
def local_model():
    from backend.config import Settings

    return LocalEmbedder(Settings(_env_file=None))


@pytest.fixture
def web_chat(make_services, fake_web, local_model):
    def make(**overrides) -> TestClient:
        web = {
            "web_search_provider": "tavily",
            "tavily_api_key": fake_web.api_key,
            "tavily_base_url": fake_web.base_url,
            "web_allow_private_addresses": True,
            "web_backoff_base_s": 0.01,
            "web_deep_read_top_n": 0,
        }
        services = make_services(
            embedder=local_model,
            llm=ExtractiveLLM(),
            score_policies_dir=None,  # the shipped v3: the real model, real routing
            **(web | overrides),
        )
        client = TestClient(create_app(services=services))
        client.__enter__()
        assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        return client

    return make


def chat(client: TestClient, message: str, **kw) -> dict:
    response = client.post("/chat", json={"message": message, **kw})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_question_outside_the_documents_is_answered_from_the_web_with_a_cited_url(web_chat, fake_web):
    client = web_chat()
    body = chat(client, OUTSIDE)
    assert body["diagnostics"]["evidence"]["route"] == "web_fallback"
    assert fake_web.count("/search") == 1
    web = [s for s in body["sources"] if s["kind"] == "web"]
    assert web
    assert all(
        s["kind"] == "web" for s in body["sources"]
    )  # the documents did not answer: no chunk is evidence
    cited = [s for s in web if s["cited"]]
    assert cited
    assert cited[0]["url"].startswith(fake_web.base_url)
    assert cited[0]["provider"] == "tavily"
    assert "公斤" in body["answer"]
    assert body["diagnostics"]["web"]["providers"][0]["status"] == "ok"
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert stored["content"] == body["answer"]
    for kept, given in zip(stored["sources"], body["sources"], strict=True):
        assert {k: kept[k] for k in given} == given  # the conversation reloads identically
        assert kept["stale"] is False


def test_a_question_the_documents_answer_makes_no_provider_call(web_chat, fake_web):
    body = chat(web_chat(), INSIDE)
    assert body["diagnostics"]["evidence"]["route"] == "answer"
    assert fake_web.count("/search") == 0
    assert body["diagnostics"]["web"] is None
    assert all(s["kind"] == "local" for s in body["sources"])


def test_web_false_never_calls_a_provider_and_says_the_documents_do_not_hold_it(web_chat, fake_web):
    body = chat(web_chat(), OUTSIDE, web=False)
    assert fake_web.count("/search") == 0
    assert body["diagnostics"]["evidence"]["route"] == "not_in_documents"
    assert body["generator"] == "not_found"
    assert "没有" in body["answer"]
    assert not any(s["cited"] for s in body["sources"])


def test_web_true_searches_beside_the_documents_and_fuses_both(web_chat, fake_web):
    page = "检索增强生成系统通常先检索再生成。三阶段检索指预取、重排和截断，常见于 RAG 后端。"
    # A copy of a local chunk on the web is dropped in favour of the local one (cross-source dedup).
    copy = {"url": "https://mirror.example.net/stages", "title": "镜像", "content": DOCS[0]["content"]}
    fake_web.register(INSIDE, [fake_web_hit(page), copy])
    body = chat(web_chat(), INSIDE, web=True)
    assert fake_web.count("/search") == 1
    assert body["diagnostics"]["evidence"]["route"] == "answer"
    assert {s["kind"] for s in body["sources"]} >= {"local"}
    assert body["diagnostics"]["web"]["requested"] is True
    assert body["diagnostics"]["evidence"]["gap"]["pool_fusion"]["gap_in"] >= 1  # web passages were fused
    assert body["diagnostics"]["web"]["dedup"]["against_local"] == 1


def fake_web_hit(content: str) -> dict:
    return {"url": "https://example.org/rag", "title": "RAG 入门", "content": content, "score": 0.9}


def test_a_repeated_question_is_served_from_the_web_cache(web_chat, fake_web):
    client = web_chat()
    chat(client, OUTSIDE)
    chat(client, OUTSIDE)
    assert fake_web.count("/search") == 1


def test_a_provider_that_fails_is_a_diagnostic_not_an_error(web_chat, fake_web):
    body = chat(web_chat(web_max_retries=0), OUTSIDE + " fake:503")
    assert body["diagnostics"]["web"]["providers"][0]["status"] == "error"
    assert body["generator"] == "not_found"  # nothing to answer from, said plainly


def test_a_slow_provider_is_cut_at_the_soft_deadline(web_chat, fake_web):
    body = chat(web_chat(web_soft_wait_ms=300), OUTSIDE + " fake:hang=30")
    web = body["diagnostics"]["web"]
    assert web["web_timeout"] is True
    assert web["soft_deadline_ms"] == 300
    assert web["providers"][0]["status"] == "timeout"
    assert fake_web.wait_for_disconnects(1)  # the request was really dropped, not left running


def test_search_returns_web_results_only_when_the_documents_do_not_answer(web_chat, fake_web):
    client = web_chat()
    inside = client.post("/search", json={"query": INSIDE}).json()
    assert (inside["route"], inside["web"], fake_web.count("/search")) == ("answer", [], 0)
    outside = client.post("/search", json={"query": OUTSIDE}).json()
    assert outside["route"] == "web_fallback"
    assert outside["web"][0]["url"].startswith(fake_web.base_url)
    assert outside["web_diagnostics"]["providers"][0]["status"] == "ok"
    never = client.post("/search", json={"query": OUTSIDE, "web": False}).json()
    assert (never["route"], never["web"]) == ("not_in_documents", [])
    assert fake_web.count("/search") == 1


def test_a_web_result_holding_unstorable_text_is_cleaned_not_a_500_at_the_final_write(web_chat, fake_web):
    """A provider's snippet with a NUL or a lone surrogate reached messages.sources (and the web
    cache): PostgreSQL refused the write after the answer was made, a 500."""
    fake_web.register(
        OUTSIDE,
        [
            {
                "url": "https://example.org/panda",
                "title": "大熊猫\x00食谱\ud800",
                "content": "大熊猫每天吃12到38公斤竹子。\x00\udc00",
                "score": 0.9,
            }
        ],
    )
    client = web_chat()
    body = chat(client, OUTSIDE, web=True)
    [web] = [s for s in body["sources"] if s["kind"] == "web"]
    assert web["title"] == "大熊猫食谱"
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert [s["title"] for s in stored["sources"] if s["kind"] == "web"] == ["大熊猫食谱"]


@pytest.mark.parametrize("web", [True, "auto"])
def test_a_local_search_past_its_limit_is_answered_from_the_web(web_chat, fake_web, stuck_search, web):
    """Beside a web leg (web: true) and before one (auto) the local search has a hard limit; past it the
    answer comes from the web, and the diagnostics say the documents were not searched in time."""
    page = "pgrag 的检索分为三个阶段：预取、启发式重排和动态截断。"
    fake_web.register(INSIDE, [fake_web_hit(page)])
    client = web_chat(web_local_timeout_s=0.3)
    stuck_search(client)
    body = chat(client, INSIDE, web=web)
    assert body["diagnostics"]["evidence"]["route"] == "web_fallback"
    assert body["diagnostics"]["web"]["local_timeout"] is True
    assert body["diagnostics"]["retrieval"]["matched_count"] == 0  # nothing of the documents was read
    assert fake_web.count("/search") == 1
    assert body["sources"]
    assert all(s["kind"] == "web" for s in body["sources"])
    assert any(s["cited"] and s["url"] == "https://example.org/rag" for s in body["sources"])
    assert "预取" in body["answer"]


def test_search_past_the_local_limit_returns_the_web_results(web_chat, fake_web, stuck_search):
    fake_web.register(INSIDE, [fake_web_hit("pgrag 的检索分为三个阶段。")])
    client = web_chat(web_local_timeout_s=0.3)
    stuck_search(client)
    response = client.post("/search", json={"query": INSIDE, "web": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["route"], body["results"]) == ("web_fallback", [])
    assert body["web"][0]["url"] == "https://example.org/rag"
    assert body["web_diagnostics"]["local_timeout"] is True


@pytest.mark.parametrize("web", [True, "auto"])
def test_a_local_search_past_its_limit_with_nothing_from_the_web_is_a_504_that_says_so(
    web_chat, fake_web, stuck_search, web
):
    """The web found nothing: the turn cannot say "not in the documents" (they were not searched), so it
    is a 504 naming WEB_LOCAL_TIMEOUT_S, never a 500, and nothing is stored."""
    fake_web.register(INSIDE, [])
    client = web_chat(web_local_timeout_s=0.3)
    stuck_search(client)
    response = client.post("/chat", json={"message": INSIDE, "web": web})
    assert response.status_code == 504, response.text
    assert "WEB_LOCAL_TIMEOUT_S" in response.json()["detail"]
    assert "the web search found nothing" in response.json()["detail"]
    assert response.json()["error"] == "LocalSearchTimeout"
    assert client.get("/conversations").json() == []


def test_a_local_search_past_its_limit_with_nothing_relevant_on_the_web_does_not_say_not_in_the_documents(
    web_chat, fake_web, stuck_search
):
    """The web answered with pages that do not bear on the question: the reply says the documents were not
    searched in time, never that they do not hold the answer."""
    fake_web.register(INSIDE, [fake_web_hit("紫薯芝士蛋糕需要三百克紫薯和两勺蜂蜜。")])
    client = web_chat(web_local_timeout_s=0.3)
    stuck_search(client)
    body = chat(client, INSIDE, web=True)
    assert body["diagnostics"]["web"]["local_timeout"] is True
    assert not any(s["cited"] for s in body["sources"])
    assert "文档中没有找到" not in body["answer"]
    assert "超时" in body["answer"]


@pytest.mark.parametrize(("web", "provider"), [(False, "tavily"), (True, "none")])
def test_without_a_web_leg_a_search_past_the_statement_limit_is_a_504_that_says_so(
    web_chat, fake_web, web, provider
):
    """With the web off for the request, or no provider, nothing can answer in the documents' place: the
    search keeps the database's limit (DB_STATEMENT_TIMEOUT_MS), and past it the turn is a 504 that
    names it; no web provider is called."""
    client = web_chat(db_statement_timeout_ms=100, web_search_provider=provider)
    services = client.app.state.services
    retrieval = services.retrieval
    search = retrieval.search

    def slow(request, *, identity):
        with services.db.as_user(identity, read_only=True) as conn:
            conn.execute("select pg_sleep(5)")  # cancelled by the statement timeout, well before
        return search(request, identity=identity)

    retrieval.search = slow
    response = client.post("/chat", json={"message": INSIDE, "web": web})
    retrieval.search = search
    assert response.status_code == 504, response.text
    assert "DB_STATEMENT_TIMEOUT_MS" in response.json()["detail"]
    assert fake_web.count("/search") == 0
    assert client.get("/conversations").json() == []


def _sleeping(conn) -> int:
    return conn.execute(
        "select count(*) from pg_stat_activity where query like 'select pg_sleep(5)%'"
    ).fetchone()[0]


@pytest.mark.parametrize("web", [True, "auto"])
def test_a_local_search_past_its_limit_gives_its_database_connection_back(web_chat, fake_web, web):
    """The thread searching the documents cannot be cancelled from asyncio: past WEB_LOCAL_TIMEOUT_S its
    statement is cancelled by PostgreSQL at that limit too (not at DB_STATEMENT_TIMEOUT_MS, 30 s), so
    searches nobody waits for do not hold the pool's connections."""
    fake_web.register(INSIDE, [fake_web_hit("pgrag 的检索分为三个阶段：预取、启发式重排和动态截断。")])
    client = web_chat(web_local_timeout_s=0.5)
    services = client.app.state.services
    retrieval = services.retrieval
    search, ended = retrieval.search, threading.Event()

    def slow(request, *, identity):
        try:
            with services.db.as_user(identity, read_only=True) as conn:
                conn.execute("select pg_sleep(5)")
            return search(request, identity=identity)
        finally:
            ended.set()

    retrieval.search = slow
    try:
        body = chat(client, INSIDE, web=web)
        assert body["diagnostics"]["web"]["local_timeout"] is True
        assert ended.wait(2.0), "the late search still held its connection 2 s after the reply"
        with services.db.owner() as conn:
            assert _sleeping(conn) == 0
    finally:
        ended.wait(10)
        retrieval.search = search
