"""Pluggable rerankers: the heuristic default, a model reranker over HTTP (the local fake Jina/Cohere API),
per-request choice, fallback to the heuristic order, and the dynamic cut on model scores."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.auth import LOCAL_IDENTITY
from backend.config import Settings
from backend.rerank import HttpReranker, RerankDocument, RerankError
from backend.retrieval.rerank import dynamic_top_k
from backend.search.types import SearchRequest
from backend.testing.fake_rerank import RerankBehaviour, relevance
from tests.factories import SEARCH_DOCS

QUERY = "澳洲的袋鼠和考拉生活在哪里？"


@pytest.fixture
def model_client(make_services, fake_rerank):
    """The API with RERANK_PROVIDER=jina pointed at the fake, and the small corpus."""
    services = make_services(
        rerank_provider="jina",
        rerank_api_key=fake_rerank.api_key,
        rerank_base_url=fake_rerank.base_url,
        rerank_timeout_s=0.5,
    )
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": SEARCH_DOCS}).status_code == 200
        yield client, services


def search(client: TestClient, **body) -> dict:
    response = client.post("/search", json={"query": QUERY, "dynamic": False, "top_k": 4, **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_heuristic_reranker_is_the_default_and_calls_no_model(model_client, fake_rerank):
    client, _ = model_client
    body = search(client)
    assert body["diagnostics"]["reranker"]["used"] == "heuristic"
    assert body["diagnostics"]["reranker"]["model"] is None
    assert all(hit["scores"]["scored_by"] == "heuristic" for hit in body["results"])
    assert fake_rerank.requests == []


def test_a_model_reranker_orders_by_its_scores(model_client, fake_rerank):
    client, _ = model_client
    fake_rerank.behaviour = RerankBehaviour(invert=True)  # it disagrees with the heuristic order
    heuristic = [h["external_id"] for h in search(client, reranker="heuristic")["results"]]
    body = search(client, reranker="jina")
    model = [h["external_id"] for h in body["results"]]
    scores = [h["scores"]["model_score"] for h in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert model != heuristic
    assert [h["scores"]["final_score"] for h in body["results"]] == scores
    d = body["diagnostics"]["reranker"]
    assert (d["requested"], d["used"], d["fallback"]) == ("jina", "jina", False)
    assert d["model"] == "jina-reranker-v2-base-multilingual"
    sent = fake_rerank.requests[-1]
    assert sent.path == "/v1/rerank"
    assert sent.headers["authorization"] == f"Bearer {fake_rerank.api_key}"
    assert sent.body["query"] == body["query"]  # the cleaned query (NFKC: full-width ？ -> ?)
    assert sent.body["top_n"] == len(sent.body["documents"]) == d["top_n"]
    assert sent.body["return_documents"] is False
    # Each result's score is the model's judgement of that very text (title line, then the content).
    by_id = {doc["external_id"]: doc for doc in SEARCH_DOCS}
    for hit in body["results"]:
        doc = by_id[hit["external_id"]]
        expected = round(1 - relevance(body["query"], f"{doc['title']}\n{doc['content']}"), 6)
        assert hit["scores"]["model_score"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (RerankBehaviour(status=503), "http_error"),
        (RerankBehaviour(malformed=True), "bad_response"),
        (RerankBehaviour(hang_s=2.0), "timeout"),
    ],
)
def test_a_failing_model_reranker_falls_back_to_the_heuristic_order(
    model_client, fake_rerank, behaviour, reason
):
    client, services = model_client
    heuristic = search(client, reranker="heuristic")["results"]
    fake_rerank.behaviour = behaviour
    body = search(client, reranker="jina")
    assert [h["chunk_id"] for h in body["results"]] == [h["chunk_id"] for h in heuristic]
    assert all(h["scores"]["model_score"] is None for h in body["results"])
    d = body["diagnostics"]["reranker"]
    assert (d["requested"], d["used"], d["fallback"], d["fallback_reason"]) == (
        "jina",
        "heuristic",
        True,
        reason,
    )
    assert d["error"]
    assert body["diagnostics"]["parameters"]["drop_ratio"] != services.settings.rerank_drop_ratio
    metrics = client.get("/metrics").text
    assert f'pgrag_rerank_fallbacks_total{{reason="{reason}",reranker="jina"}} 1.0' in metrics


def test_an_unknown_or_unconfigured_reranker_is_a_422(model_client, client):
    with_model, _ = model_client
    assert with_model.post("/search", json={"query": QUERY, "reranker": "bge"}).status_code == 422
    response = client.post("/search", json={"query": QUERY, "reranker": "jina"})  # no RERANK_PROVIDER
    assert response.status_code == 422
    assert "available: heuristic" in response.json()["detail"]
    assert client.post("/chat", json={"message": QUERY, "reranker": "cohere"}).status_code == 422


def test_the_dynamic_cut_reads_model_scores_with_their_own_ratio(model_client):
    _, services = model_client
    result = services.retrieval.search(
        SearchRequest(QUERY, top_k=4, dynamic=True, reranker="jina"), identity=LOCAL_IDENTITY
    )
    ratio = services.settings.rerank_drop_ratio
    assert result.diagnostics.parameters.drop_ratio == ratio
    scores = [c.final_score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    assert len(result.results) == dynamic_top_k(scores, top_k_min=1, top_k_max=4, drop_ratio=ratio)
    assert all(c.final_score >= scores[0] * ratio for c in result.results[1:])
    # The confidence reads the policy's features, not the model's scores: the same as the heuristic's.
    heuristic = services.retrieval.search(
        SearchRequest(QUERY, top_k=4, dynamic=True), identity=LOCAL_IDENTITY
    )
    assert result.confidence["confidence_level"] == heuristic.confidence["confidence_level"]
    assert result.confidence["best_overall_score"] == pytest.approx(
        heuristic.confidence["best_overall_score"]
    )


def test_chat_evidence_is_ordered_by_the_chosen_model(model_client, fake_rerank):
    client, _ = model_client
    response = client.post("/chat", json={"message": QUERY, "reranker": "jina"})
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["diagnostics"]["retrieval"]["reranker"]["used"] == "jina"
    assert fake_rerank.requests
    in_context = [s for s in reply["sources"] if s["in_context"]]
    assert in_context
    assert all(s["why"]["scored_by"] == "jina" for s in in_context)


def test_the_cohere_dialect_posts_v2_rerank_and_scores_only_the_policy_best_top_n(fake_rerank):
    settings = Settings(
        _env_file=None,
        rerank_provider="cohere",
        rerank_api_key=fake_rerank.api_key,
        rerank_base_url=fake_rerank.base_url,
        rerank_model="rerank-multilingual-v3.0",
    )
    reranker = HttpReranker(settings, "cohere")
    docs = [
        RerankDocument("考拉吃桉树叶", 0.1),
        RerankDocument("袋鼠在澳洲", 0.9),
        RerankDocument("考拉", 0.5),
    ]
    ranked = reranker.rerank("考拉吃什么", docs, top_n=2)
    sent = fake_rerank.requests[-1]
    assert sent.path == "/v2/rerank"
    assert "return_documents" not in sent.body
    assert sent.body["model"] == "rerank-multilingual-v3.0"
    assert sent.body["documents"] == ["袋鼠在澳洲", "考拉"]  # the policy's best two, in its order
    assert [r.index for r in ranked] == [2, 1]  # mapped back to the caller's indexes, model order
    reranker.close()


def test_a_wrong_key_is_a_rerank_error_not_a_crash(fake_rerank):
    settings = Settings(
        _env_file=None, rerank_provider="jina", rerank_api_key="wrong", rerank_base_url=fake_rerank.base_url
    )
    with pytest.raises(RerankError) as caught:
        HttpReranker(settings, "jina").rerank("q", [RerankDocument("d", 1.0)], top_n=5)
    assert caught.value.reason == "http_error"
    assert "401" in str(caught.value)


def test_settings_refuse_a_default_model_reranker_that_is_not_configured():
    with pytest.raises(ValueError, match="RERANK_DEFAULT=jina needs RERANK_PROVIDER=jina"):
        Settings(_env_file=None, rerank_default="jina")
    with pytest.raises(ValueError, match="RERANK_PROVIDER=cohere needs RERANK_API_KEY"):
        Settings(_env_file=None, rerank_provider="cohere")
    # A self-hosted server (vLLM, Infinity) may need no key.
    assert Settings(_env_file=None, rerank_provider="jina", rerank_base_url="http://127.0.0.1:9")
