"""The API with LLM_PROVIDER=openai_compatible and EMBEDDING_PROVIDER=openai_compatible, both pointed at
the local fake OpenAI-compatible server and built by the composition function from settings alone:
ingest and search, /chat (answers, streaming, follow-up rewrites, assist-mode tool calls), the
WhereBuilder, /research (plans, sufficiency checks, token usage), the embedding-space guard after a
switch of embedding model, and provider failures as clear 502s."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.composition import build_services
from backend.config import Settings
from backend.documents.reembed import reembed
from backend.llm.openai_compatible import forget_server_traits
from backend.testing.fake_openai import FakeOpenAI, Raw
from backend.testing.fake_openai_wire import Message
from tests.test_research_api import DOCS

PLAN = {
    "sections": [
        {"title": "黑豹队的防守", "question": "黑豹队的防守丢了多少分？", "queries": ["黑豹队 防守 失分"]},
        {"title": "考拉的睡眠", "question": "考拉每天睡多久？", "queries": ["考拉 睡眠 时间"]},
    ]
}
VERDICT = {"sufficient": True, "missing": "", "gap_queries": []}


def _asks(body: dict[str, Any], text: str) -> bool:
    return any(text in str(m.get("content") or "") for m in body["messages"])


class Model:
    """The fake model's script: answers each kind of request by what it asks (requests run concurrently)."""

    def __init__(self) -> None:
        self.where: dict[str, Any] | None = None  # the WhereBuilder's reading; None: an empty one
        self.answer = "根据资料，答案见此[1]。"

    def __call__(self, body: dict[str, Any]) -> Message | Raw:
        if _asks(body, "You plan a research report"):
            return Message((json.dumps(PLAN, ensure_ascii=False),), total_tokens=100)
        if _asks(body, "You check whether the evidence"):
            return Message((json.dumps(VERDICT),), total_tokens=100)
        if _asks(body, "which of the user's documents it is limited to"):
            empty = {"date_field": "created_at", "date_from": "", "date_to": "", "lang": "", "tags": []}
            where = self.where or {**empty, "min_quality": -1, "phrases": []}
            return Message((json.dumps(where, ensure_ascii=False),), total_tokens=50)
        if _asks(body, "Rewrite the last user message"):
            return Message(("考拉每天睡多久",), total_tokens=30)
        if body.get("stream"):
            last = body["messages"][-1]["content"]
            if body["messages"][-1]["role"] == "user":
                ids = re.findall(r'^<source n="(\d+)">', last, flags=re.MULTILINE)
                text = self.answer.replace("[1]", f"[{ids[0]}]") if ids else self.answer
            else:
                text = self.answer
            half = len(text) // 2
            return Message((text[:half], text[half:]), total_tokens=200)
        return Message(("",), total_tokens=10)  # gap queries: none


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    forget_server_traits()
    # 384 dimensions: the fake's hashing vectors then behave as the test embedder's do under the test
    # confidence policy (tests/fixtures/policies), so questions about the corpus are answered.
    with FakeOpenAI(embedding_dims=384) as server:
        server.script = Model()
        yield server


def provider_settings(settings: Settings, fake: FakeOpenAI) -> dict[str, Any]:
    """The test settings with both providers pointed at the fake OpenAI-compatible server."""
    return {
        **settings.model_dump(),
        "llm_provider": "openai_compatible",
        "embedding_provider": "openai_compatible",
        "openai_base_url": fake.url,
        "openai_api_key": fake.api_key,
        "openai_model": fake.model,
        "openai_embedding_model": fake.embedding_model,
    }


@pytest.fixture
def make_client(database_url, db, settings, fake) -> Iterator[Callable[..., TestClient]]:
    clients: list[tuple[TestClient, Any]] = []

    def make(**overrides: Any) -> TestClient:
        values = {**provider_settings(settings, fake), "llm_max_retries": 0, **overrides}
        services = build_services(Settings.model_validate(values), database_url=database_url, migrate=False)
        client = TestClient(create_app(services=services))
        client.__enter__()
        clients.append((client, services))
        return client

    yield make
    for client, services in clients:
        client.__exit__(None, None, None)
        services.close()


def ingest(client: TestClient) -> None:
    response = client.post("/documents/batch", json={"documents": DOCS})
    assert response.status_code == 200, response.text


def test_documents_are_embedded_by_the_server_and_searched_with_its_query_vectors(make_client, fake):
    client = make_client()
    ingest(client)
    embedded = [text for r in fake.embedding_requests for text in r.body["input"]]
    assert any("黑豹队的防守在2015赛季只丢了308分" in text for text in embedded)
    response = client.post("/search", json={"query": "黑豹队的防守丢了多少分", "top_k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["results"][0]["external_id"] == "panthers"
    assert body["diagnostics"]["embedding_model"] == "fake-embed@384"  # the size the server's vectors have
    assert fake.embedding_requests[-1].body["input"] == ["黑豹队的防守丢了多少分"]


def test_chat_answers_from_the_model_with_a_cited_source_and_rewrites_a_follow_up(make_client, fake):
    client = make_client()
    ingest(client)
    first = client.post("/chat", json={"message": "考拉每天睡多久？"})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["diagnostics"]["generator"] == "openai_compatible"
    assert body["diagnostics"]["llm"] == "fake-chat"
    assert body["answer"].startswith("根据资料，答案见此[")
    assert [s["external_id"] for s in body["sources"] if s["cited"]] == ["koala"]
    answer_request = next(r.body for r in fake.requests if r.body.get("stream"))
    assert answer_request["stream_options"] == {"include_usage": True}

    follow = client.post("/chat", json={"message": "那它呢？", "conversation_id": body["conversation_id"]})
    assert follow.status_code == 200, follow.text
    rewrite = follow.json()["diagnostics"]["rewrite"]
    assert (rewrite["method"], rewrite["query"]) == ("llm", "考拉每天睡多久")
    asked = next(r.body for r in fake.requests if _asks(r.body, "Rewrite the last user message"))
    assert "stream" not in asked
    assert "考拉每天睡多久？" in json.dumps(asked["messages"], ensure_ascii=False)  # the conversation so far


def test_chat_streams_the_models_deltas(make_client, fake):
    client = make_client()
    ingest(client)
    with client.stream("POST", "/chat", json={"message": "考拉每天睡多久？", "stream": True}) as response:
        assert response.status_code == 200
        raw = "".join(response.iter_text())
    frames = [f.split("\n") for f in raw.split("\n\n") if f]
    events = [(f[0].removeprefix("event: "), json.loads(f[1].removeprefix("data: "))) for f in frames]
    deltas = [e["text"] for kind, e in events if kind == "delta"]
    assert len(deltas) == 2  # the fake sent the answer in two chunks; each reached the client as it came
    assert events[-1][0] == "done"
    assert events[-1][1]["answer"] == "".join(deltas)


def test_assist_mode_runs_the_models_tool_call_and_cites_what_it_found(make_client, fake):
    client = make_client(
        chat_assist_tools=True, local_top_k=1, step_top_k=1, chat_gap_supplement_enabled=False
    )
    ingest(client)
    model = fake.script
    assert isinstance(model, Model)
    calls = iter([True])

    def script(body: dict[str, Any]) -> Message | Raw:
        if body.get("tools") and next(calls, False):
            return Message(tool_calls=(("search_local", {"query": "考拉 睡眠"}),), total_tokens=80)
        return model(body)

    fake.script = script
    model.answer = "黑豹队只丢了308分[1]，考拉每天睡二十小时[2]。"
    body = client.post("/chat", json={"message": "黑豹队的防守丢了多少分？"}).json()
    tool_calls = body["diagnostics"]["tool_calls"]
    assert [(c["tool"], c["query"]) for c in tool_calls] == [("search_local", "考拉 睡眠")]
    by_n = {s["n"]: s for s in body["sources"]}
    assert by_n[2]["external_id"] == "koala"
    assert by_n[2]["cited"] is True
    with_tools = [r.body for r in fake.requests if r.body.get("tools")]
    assert "search_local" in [t["function"]["name"] for t in with_tools[0]["tools"]]
    read_back = with_tools[1]["messages"]
    assert read_back[-2]["tool_calls"][0]["function"]["name"] == "search_local"
    assert read_back[-1]["role"] == "tool"
    assert '<source n="2">' in read_back[-1]["content"]


def test_the_where_builder_reads_the_question_with_the_model(make_client, fake):
    client = make_client(where_builder="auto")
    docs = [{**d, "metadata": {"tags": ["体育"]}} if d["external_id"] == "panthers" else d for d in DOCS]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
    model = fake.script
    assert isinstance(model, Model)
    model.where = {
        "date_field": "created_at",
        "date_from": "",
        "date_to": "",
        "lang": "",
        "tags": ["体育"],
        "min_quality": -1,
        "phrases": [],
    }
    response = client.post("/search", json={"query": "体育资料里的防守", "infer_filters": True, "top_k": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["diagnostics"]["where"]["method"] == "openai_compatible"
    assert [r["external_id"] for r in body["results"]] == ["panthers"]
    asked = next(r.body for r in fake.requests if _asks(r.body, "which of the user's documents"))
    assert asked["response_format"]["type"] == "json_schema"
    assert "体育" in json.dumps(asked["messages"], ensure_ascii=False)  # the caller's vocabulary


def test_malformed_json_from_the_where_builder_falls_back_to_the_rules(make_client, fake):
    client = make_client(where_builder="auto")
    ingest(client)
    model = fake.script

    def script(body: dict[str, Any]) -> Message | Raw:
        if _asks(body, "which of the user's documents it is limited to"):
            return Message(('{"date_field": "created_at", "tags": ["体',), total_tokens=5)
        assert isinstance(model, Model)
        return model(body)

    fake.script = script
    body = client.post("/search", json={"query": "黑豹队的防守", "infer_filters": True}).json()
    where = body["diagnostics"]["where"]
    assert (where["method"], where["fallback"]) == ("rules", "malformed output (no JSON object)")
    assert body["results"][0]["external_id"] == "panthers"


def test_research_plans_judges_and_writes_with_the_servers_token_counts(make_client, fake):
    client = make_client()
    ingest(client)
    response = client.post("/research", json={"question": "黑豹队的防守怎么样？考拉的作息呢？"})
    assert response.status_code == 200, response.text
    body = response.json()
    d = body["diagnostics"]
    assert d["plan_method"] == "llm"
    assert [s["title"] for s in body["sections"]] == ["黑豹队的防守", "考拉的睡眠"]
    assert all(v["method"] == "llm" for s in d["sections"] for v in s["sufficiency"])
    assert body["generator"] == "openai_compatible"
    assert d["budget"]["used"]["tokens"] == 100 + 2 * 100 + 2 * 200  # as the server counted them
    assert d["budget"]["used"]["tokens_estimated"] == 0
    plan = next(r.body for r in fake.requests if _asks(r.body, "You plan a research report"))
    assert plan["response_format"]["json_schema"]["schema"]["properties"]["sections"]


def test_a_server_without_json_schema_still_plans_through_json_mode(make_client, fake):
    fake.json_schema = False
    client = make_client()
    ingest(client)
    body = client.post("/research", json={"question": "黑豹队的防守怎么样？考拉的作息呢？"}).json()
    assert body["diagnostics"]["plan_method"] == "llm"
    kinds = [
        (r.body.get("response_format") or {}).get("type") for r in fake.requests if _asks(r.body, "JSON")
    ]
    assert kinds[:2] == ["json_schema", "json_object"]  # refused once, then JSON mode
    assert "json_schema" not in kinds[2:]


def test_switching_the_embedding_model_is_refused_until_the_corpus_is_re_embedded(make_client, fake):
    ingest(make_client())
    with FakeOpenAI(embedding_model="bge-m3", embedding_dims=384) as other:
        client = make_client(openai_embedding_base_url=other.url, openai_embedding_model="bge-m3")
        query = {"query": "黑豹队的防守", "mode": "vector"}
        refused = client.post("/search", json=query)
        assert refused.status_code == 409
        assert "fake-embed@384" in json.dumps(refused.json(), ensure_ascii=False)  # names the stored model

        services = client.app.state.services
        summary = reembed(services.pool, services.embedder, batch_size=16)
        assert summary.model == "bge-m3@384"
        assert any(r.body["model"] == "bge-m3" for r in other.embedding_requests)
        response = client.post("/search", json=query)
        assert response.status_code == 200, response.text
        assert response.json()["results"][0]["external_id"] == "panthers"


def test_a_rate_limited_model_is_a_502_that_says_so(make_client, fake):
    client = make_client()
    ingest(client)
    fake.script = lambda body: Raw(429, json.dumps({"error": {"message": "Rate limit reached"}}).encode())
    response = client.post("/chat", json={"message": "考拉每天睡多久？"})
    assert response.status_code == 502
    assert "HTTP 429 Rate limit reached" in response.text
    assert "Traceback" not in response.text


def test_closing_the_services_closes_the_model_and_embedding_connections(database_url, settings, fake):
    values = provider_settings(settings, fake)
    services = build_services(Settings.model_validate(values), database_url=database_url, migrate=False)
    services.embedder.embed_query("考拉")  # a connection is open to the server
    services.close()
    # A closed httpx client refuses a new request: the sockets a process reload would otherwise leak.
    with pytest.raises(RuntimeError, match="closed"):
        services.embedder.embed_query("考拉")
    with pytest.raises(RuntimeError, match="closed"):
        services.llm.complete("", "考拉")
