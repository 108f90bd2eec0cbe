"""POST /chat and the conversation history: citations, persistence, follow-ups, SSE, staleness."""

from __future__ import annotations

import json

import pytest

from backend.testing import ScriptedLLM

DOCS = [
    {
        "external_id": "kangaroo",
        "title": "尤金袋鼠",
        "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。尤金袋鼠一书的作者是约翰·古尔德。",
    },
    {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"},
    {
        "external_id": "panthers",
        "title": "Carolina Panthers",
        "content": "The Panthers defense gave up just 308 points, ranking sixth in the league.",
    },
]


@pytest.fixture
def corpus(client):
    assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
    return client


def ask(client, message, **kw):
    response = client.post("/chat", json={"message": message, **kw})
    assert response.status_code == 200, response.text
    return response.json()


def test_answer_keeps_valid_citations_removes_invalid_ones_and_persists_sources(corpus, scripted_llm):
    scripted_llm.answers = ["尤金袋鼠分布在澳洲南部岛屿[1]，也见于其他地方[7]。"]
    body = ask(corpus, "尤金袋鼠分布在哪里？")
    assert body["answer"] == "尤金袋鼠分布在澳洲南部岛屿[1]，也见于其他地方。"
    assert body["diagnostics"]["citations"] == {"valid": [1], "invalid_removed": 1}
    first = body["sources"][0]
    assert first["n"] == 1
    assert first["cited"] is True
    assert first["external_id"] == "kangaroo"
    assert {"vector_rank", "full_text_rank", "rrf_score", "keyword_coverage", "final_score"} <= set(
        first["why"]
    )
    assert first["content_hash"]
    assert first["snippet"].startswith("尤金袋鼠")
    # The model saw exactly the numbered sources that were stored.
    assert [s.n for s in scripted_llm.calls[0].sources] == [s["n"] for s in body["sources"]]

    # Another conversation in between, then the first one's sources come back exactly as stored.
    ask(corpus, "考拉吃什么？")
    messages = corpus.get(f"/conversations/{body['conversation_id']}/messages").json()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    stored = messages[1]
    assert stored["id"] == body["message_id"]
    assert stored["content"] == body["answer"]
    assert [
        {k: v for k, v in s.items() if k not in ("stale", "stale_reason", "deleted")}
        for s in stored["sources"]
    ] == body["sources"]
    assert all(s["stale"] is False for s in stored["sources"])
    listed = corpus.get("/conversations").json()
    assert {c["id"] for c in listed} >= {body["conversation_id"]}
    assert len(listed) == 2


def test_follow_up_is_rewritten_with_the_conversation_to_retrieve_the_right_entity(corpus, scripted_llm):
    scripted_llm.answers = ["尤金袋鼠分布在澳洲南部岛屿[1]。", "作者是约翰·古尔德[1]。"]
    scripted_llm.completions = ["尤金袋鼠一书的作者是谁？"]
    first = ask(corpus, "尤金袋鼠分布在哪些地区？")
    second = ask(corpus, "那它的作者是谁？", conversation_id=first["conversation_id"])
    assert second["diagnostics"]["rewrite"] == {"query": "尤金袋鼠一书的作者是谁？", "method": "llm"}
    assert second["sources"][0]["external_id"] == "kangaroo"
    # The rewrite prompt saw the earlier turn.
    assert "尤金袋鼠分布在哪些地区" in scripted_llm.complete_calls[0].prompt
    assert len(corpus.get(f"/conversations/{first['conversation_id']}/messages").json()) == 4


def test_follow_up_without_an_llm_uses_the_heuristic_rewrite(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    services = make_services(llm=ScriptedLLM(answers=["答[1]。"]))  # complete() -> None: no LLM rewriting
    with TestClient(create_app(services=services)) as c:
        c.post("/documents/batch", json={"documents": DOCS})
        first = ask(c, "尤金袋鼠分布在哪些地区？")
        second = ask(c, "那它的作者是谁？", conversation_id=first["conversation_id"])
    assert second["diagnostics"]["rewrite"]["method"] == "heuristic"
    assert "尤金" in second["diagnostics"]["rewrite"]["query"]
    assert second["sources"][0]["external_id"] == "kangaroo"


def test_nothing_relevant_says_so_lists_related_documents_uncited_without_asking_the_model(
    corpus, scripted_llm
):
    body = ask(corpus, "量子计算机的纠错码如何实现？")
    assert body["generator"] == "not_found"
    assert "没有找到" in body["answer"]
    assert scripted_llm.calls == []
    assert body["sources"]  # the closest documents, for the reader to look at
    assert all(not s["cited"] and not s["in_context"] for s in body["sources"])
    assert len({s["document_id"] for s in body["sources"]}) == len(body["sources"]) <= 3
    stored = corpus.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert [s["chunk_id"] for s in stored["sources"]] == [s["chunk_id"] for s in body["sources"]]
    assert stored["content"] == body["answer"]
    assert stored["metadata"]["generator"] == "not_found"


def test_stream_sends_deltas_then_one_final_event_with_sources_and_ids(corpus, scripted_llm):
    scripted_llm.answers = ["考拉以桉树叶为食[1]。"]
    with corpus.stream("POST", "/chat", json={"message": "考拉吃什么？", "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = "".join(response.iter_text())
    frames = [f for f in raw.split("\n\n") if f]
    events = [
        (f.split("\n")[0].removeprefix("event: "), json.loads(f.split("\n")[1].removeprefix("data: ")))
        for f in frames
    ]
    kinds = [k for k, _ in events]
    assert kinds[-1] == "done"
    assert set(kinds[:-1]) == {"delta"}
    assert len(kinds) > 2
    assert "".join(e["text"] for k, e in events if k == "delta") == "考拉以桉树叶为食[1]。"
    done = events[-1][1]
    assert done["answer"] == "考拉以桉树叶为食[1]。"
    assert done["sources"][0]["external_id"] == "koala"
    assert done["message_id"]
    assert done["conversation_id"]
    stored = corpus.get(f"/conversations/{done['conversation_id']}/messages").json()
    assert stored[1]["id"] == done["message_id"]


def test_sources_become_stale_when_the_document_changes_or_is_deleted(corpus, scripted_llm):
    scripted_llm.answers = ["答案[1]。"]
    body = ask(corpus, "考拉吃什么？")
    url = f"/conversations/{body['conversation_id']}/messages"
    assert corpus.get(url).json()[1]["sources"][0]["stale"] is False
    corpus.post("/documents", json={"external_id": "koala", "title": "考拉", "content": "考拉其实很少喝水。"})
    source = corpus.get(url).json()[1]["sources"][0]
    assert source["stale"] is True
    assert source["stale_reason"] == "document changed"
    corpus.delete(f"/documents/{body['sources'][0]['document_id']}")
    source = corpus.get(url).json()[1]["sources"][0]
    assert source["stale"] is True
    assert source["stale_reason"] == "document deleted"


def test_unknown_conversation_is_404(corpus):
    missing = "00000000-0000-0000-0000-000000000001"
    assert corpus.get(f"/conversations/{missing}/messages").status_code == 404
    response = corpus.post("/chat", json={"message": "考拉", "conversation_id": missing})
    assert response.status_code == 404
    assert missing in response.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"message": ""},
        {"message": "   "},
        {"message": "问" * 3000},
        {},
        {"message": "x", "conversation_id": "nope"},
    ],
)
def test_bad_chat_requests_are_4xx_and_store_nothing(corpus, body):
    response = corpus.post("/chat", json=body)
    assert 400 <= response.status_code < 500
    assert response.json()["detail"]
    assert corpus.get("/conversations").json() == []


def test_llm_failure_is_a_502_and_stores_nothing(corpus, scripted_llm):
    from backend.errors import ProviderError

    scripted_llm.answers = [ProviderError("Gemini answered 503 three times")]
    response = corpus.post("/chat", json={"message": "考拉吃什么？"})
    assert response.status_code == 502
    assert "503" in response.json()["detail"]
    assert corpus.get("/conversations").json() == []


def sse_events(response) -> list[tuple[str, dict]]:
    frames = [f for f in "".join(response.iter_text()).split("\n\n") if f]
    return [
        (f.split("\n")[0].removeprefix("event: "), json.loads(f.split("\n")[1].removeprefix("data: ")))
        for f in frames
    ]


def test_a_database_failure_after_the_200_ends_the_stream_with_an_error_event(
    corpus, scripted_llm, monkeypatch
):
    import psycopg

    from backend.db.repositories import conversations as conversations_repo

    def fail(*args, **kwargs):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(conversations_repo, "add_message", fail)
    scripted_llm.answers = ["考拉以桉树叶为食[1]。"]
    with corpus.stream("POST", "/chat", json={"message": "考拉吃什么？", "stream": True}) as response:
        assert response.status_code == 200
        events = sse_events(response)
    kinds = [k for k, _ in events]
    assert kinds[0] == "delta"
    assert kinds[-1] == "error"
    assert "done" not in kinds
    error = events[-1][1]
    assert (error["status"], error["error"]) == (503, "DatabaseUnavailable")
    assert "server closed" not in error["detail"]  # the database's own words stay in the log


def test_an_unexpected_failure_mid_stream_is_an_error_event_without_internals(corpus, scripted_llm):
    def answer(question, sources, history=(), sampling=None):
        yield "考拉"
        raise RuntimeError("/srv/app/secret.py line 3: boom")

    scripted_llm.answer = answer
    with corpus.stream("POST", "/chat", json={"message": "考拉吃什么？", "stream": True}) as response:
        assert response.status_code == 200
        events = sse_events(response)
    assert [k for k, _ in events] == ["delta", "error"]
    assert events[1][1]["status"] == 500
    assert "secret" not in events[1][1]["detail"]
    assert corpus.get("/conversations").json() == []
