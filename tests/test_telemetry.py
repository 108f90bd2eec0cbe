"""Operational telemetry: /metrics after real requests, the query-embedding cache, the start-up warm-up,
and who may read /metrics."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.errors import ProviderError
from backend.testing import HashingEmbedder, ScriptedLLM
from tests.auth_tokens import FakeAuthServer, es256
from tests.factories import SEARCH_DOCS
from tests.fake_http import serve


def sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from the exposition text (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


class CountingEmbedder(HashingEmbedder):
    """HashingEmbedder that counts query embeddings and records where it was warmed up."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0
        self.warmed_on: list[threading.Thread] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return super().embed_query(text)

    def warm_up(self) -> None:
        self.warmed_on.append(threading.current_thread())


@pytest.fixture
def app_client(make_services):
    embedder = CountingEmbedder()
    services = make_services(embedder=embedder)
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": SEARCH_DOCS}).status_code == 200
        yield client, embedder


def test_a_search_moves_the_request_stage_result_and_score_metrics(app_client):
    client, _ = app_client
    before = client.get("/metrics")
    assert before.status_code == 200
    assert before.headers["content-type"].startswith("text/plain")
    assert client.post("/search", json={"query": "尤金袋鼠分布在哪些地区？"}).status_code == 200
    after = client.get("/metrics").text

    route = {"method": "POST", "route": "/search", "status": "200"}
    assert sample(after, "pgrag_http_request_duration_seconds_count", **route) == 1
    for stage in ("embed", "sql"):
        assert sample(after, "pgrag_stage_duration_seconds_count", stage=stage) >= 1
    assert sample(after, "pgrag_searches_total", endpoint="search", outcome="results") == 1
    assert sample(after, "pgrag_results_count", endpoint="search") == 1
    assert sample(after, "pgrag_best_score_count", endpoint="search", reranker="heuristic") == 1
    assert sample(after, "pgrag_rerank_total", reranker="heuristic", outcome="ok") >= 1
    # Route templates, not raw paths: one label for every document id.
    client.get("/documents/00000000-0000-0000-0000-000000000099")
    templated = client.get("/metrics").text
    assert 'route="/documents/{document_id}"' in templated
    assert "00000000-0000-0000-0000-000000000099" not in templated


def test_an_empty_search_counts_toward_the_empty_rate(app_client):
    client, _ = app_client
    body = client.post("/search", json={"query": "量子色动力学", "mode": "fulltext"}).json()
    assert body["results"] == []
    text = client.get("/metrics").text
    assert sample(text, "pgrag_searches_total", endpoint="search", outcome="empty") == 1
    assert sample(text, "pgrag_results_bucket", endpoint="search", le="0.0") == 1


def test_a_repeated_query_is_embedded_once(app_client):
    client, embedder = app_client
    for _ in range(3):
        assert client.post("/search", json={"query": "考拉吃什么？"}).status_code == 200
    assert embedder.queries == 1
    text = client.get("/metrics").text
    assert sample(text, "pgrag_query_embedding_cache_total", result="miss") == 1
    assert sample(text, "pgrag_query_embedding_cache_total", result="hit") == 2


def test_the_cache_can_be_turned_off(make_services):
    embedder = CountingEmbedder()
    services = make_services(embedder=embedder, query_embedding_cache_size=0)
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": SEARCH_DOCS})
        for _ in range(2):
            client.post("/search", json={"query": "考拉吃什么？"})
    assert embedder.queries == 2


def test_the_embedder_is_warmed_at_start_up_off_the_event_loop(app_client):
    client, embedder = app_client
    assert len(embedder.warmed_on) == 1
    assert client.portal is not None
    loop_thread = client.portal.call(threading.current_thread)
    assert embedder.warmed_on[0] is not loop_thread
    assert sample(client.get("/metrics").text, "pgrag_embedder_warm_up_seconds") >= 0


def test_a_chat_answer_records_generation_and_an_llm_failure_is_counted(make_services):
    llm = ScriptedLLM(answers=["尤金袋鼠分布在澳洲南部[1]。", ProviderError("Gemini is down")])
    services = make_services(llm=llm, chat_gap_supplement_enabled=False)
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": SEARCH_DOCS})
        assert client.post("/chat", json={"message": "尤金袋鼠分布在哪些地区？"}).status_code == 200
        assert client.post("/chat", json={"message": "尤金袋鼠分布在哪些地区？"}).status_code == 502
        text = client.get("/metrics").text
    assert sample(text, "pgrag_stage_duration_seconds_count", stage="generate") == 2
    assert sample(text, "pgrag_searches_total", endpoint="chat", outcome="results") == 1
    assert sample(text, "pgrag_provider_errors_total", kind="llm", provider="scripted") == 1
    assert sample(text, "pgrag_http_request_duration_seconds_count", route="/chat", status="502") == 1


def test_metrics_can_be_turned_off(make_services):
    services = make_services(metrics_enabled=False)
    with TestClient(create_app(services=services)) as client:
        assert client.get("/metrics").status_code == 404


def test_metrics_need_no_token_in_supabase_mode_but_searches_do(make_services):
    with serve(FakeAuthServer([es256("metrics")]).respond) as url:
        services = make_services(auth_mode="supabase", supabase_url=url)
        with TestClient(create_app(services=services)) as client:
            assert client.post("/search", json={"query": "考拉"}).status_code == 401
            response = client.get("/metrics")
    assert response.status_code == 200
    assert 'route="/search",status="401"' in response.text


def test_made_up_methods_and_paths_do_not_grow_the_label_set(make_services):
    """Issue 24, finding 8: every made-up HTTP method became a new label value (3,000 requests to
    /health grew /metrics to 15.6 MB); now the method, the route and the status come from fixed sets."""
    import random
    import string

    rng = random.Random(24)
    with TestClient(create_app(services=make_services())) as client:
        client.get("/health")
        before = client.get("/metrics").text
        for _ in range(200):
            method = "".join(rng.choices(string.ascii_uppercase, k=8))
            path = "/" + "".join(rng.choices(string.ascii_lowercase, k=12))
            client.request(method, "/health")
            client.request(method, path)
            client.get(path)
        text = client.get("/metrics").text
    labels = set(re.findall(r"pgrag_http_request_duration_seconds_count\{([^}]*)\}", text))
    methods = {dict(re.findall(r'(\w+)="([^"]*)"', lab))["method"] for lab in labels}
    routes = {dict(re.findall(r'(\w+)="([^"]*)"', lab))["route"] for lab in labels}
    assert methods <= {"GET", "other"}
    assert routes <= {"/health", "/metrics", "unmatched"}
    assert len(labels) <= 8
    assert len(text) < len(before) + 20_000
