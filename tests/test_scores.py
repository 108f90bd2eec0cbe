"""Every result's score in [0, 1] with one meaning in every mode (seed 004 retrieval.scoring), and
min_score on /search and /chat (issue 15, item 3)."""

from __future__ import annotations

import math

import pytest

from backend.retrieval.scoring import chunk_score, score_from_distance
from tests.factories import SEARCH_DOCS


@pytest.mark.parametrize(
    ("value", "metric", "expected"),
    [
        (0.0, "cosine_distance", 1.0),  # same direction
        (1.0, "cosine_distance", 0.5),  # orthogonal
        (2.0, "cosine_distance", 0.0),  # opposite
        (1.0, "cosine_similarity", 1.0),
        (0.0, "cosine_similarity", 0.5),
        (-1.0, "cosine_similarity", 0.0),
        (0.6, "inner_product", 0.8),
        (-0.6, "negative_inner_product", 0.8),  # pgvector's <#> is the negated inner product
        (0.0, "l2", 1.0),
        (1.0, "l2", math.exp(-1.0)),
    ],
)
def test_score_from_distance_maps_each_metric_to_the_unit_interval(value, metric, expected):
    assert score_from_distance(value, metric) == pytest.approx(expected)


def test_one_pair_of_unit_vectors_scores_the_same_under_cosine_and_inner_product():
    cosine = 0.37
    by_distance = score_from_distance(1 - cosine, "cosine_distance")
    assert score_from_distance(cosine, "cosine_similarity") == pytest.approx(by_distance)
    assert score_from_distance(cosine, "inner_product") == pytest.approx(by_distance)
    assert score_from_distance(-cosine, "negative_inner_product") == pytest.approx(by_distance)


def test_scores_are_clamped_and_l2_decay_follows_alpha():
    assert score_from_distance(1.8, "inner_product") == 1.0  # unnormalised vectors leave [0, 1]
    assert score_from_distance(1.8, "inner_product", normalize=False) == pytest.approx(1.4)
    assert score_from_distance(2.0, "l2", alpha=0.5) == pytest.approx(math.exp(-1.0))
    assert score_from_distance(0.5, "l2") > score_from_distance(1.5, "l2")  # closer scores higher


@pytest.mark.parametrize(
    ("value", "metric", "alpha"),
    [(math.nan, "cosine_distance", 1.0), (-0.1, "l2", 1.0), (1.0, "l2", 0.0), (0.5, "hamming", 1.0)],
)
def test_score_from_distance_refuses_values_it_cannot_map(value, metric, alpha):
    with pytest.raises(ValueError, match=r"finite|negative|alpha|unknown"):
        score_from_distance(value, metric, alpha=alpha)


def test_chunk_score_reads_the_sql_functions_cosine():
    assert chunk_score(0.5) == pytest.approx(0.75)
    assert chunk_score(None) is None


@pytest.fixture
def corpus(client):
    assert client.post("/documents/batch", json={"documents": SEARCH_DOCS}).status_code == 200
    return client


def search(client, **body):
    response = client.post("/search", json={"dynamic": False, "top_k": 4, **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_every_result_carries_the_cosine_score_next_to_the_raw_fields(corpus):
    body = search(corpus, query="尤金袋鼠分布在哪些地区？")
    for hit in body["results"]:
        assert 0.0 <= hit["score"] <= 1.0
        assert hit["score"] == pytest.approx((1 + hit["scores"]["similarity"]) / 2, abs=1e-6)
        assert hit["scores"]["score"] == hit["score"]  # also stored with citations
        assert "final_score" in hit["scores"]  # the raw ranking fields stay
    scores = body["diagnostics"]["scores"]
    assert scores["metric"] == "cosine_similarity"
    assert "(1 + cosine" in scores["meaning"]
    assert scores["best_score"] == pytest.approx(max(h["score"] for h in body["results"]))


def test_a_chunk_has_the_same_score_in_every_mode_and_under_every_rerank_policy(corpus, make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    def scores(client, **body):
        return {h["external_id"]: h["score"] for h in search(client, query="桉树叶", **body)["results"]}

    hybrid, vector, fulltext = (scores(corpus, mode=m) for m in ("hybrid", "vector", "fulltext"))
    assert fulltext["koala"] is not None  # full-text mode scores by the cosine too
    assert hybrid["koala"] == pytest.approx(vector["koala"]) == pytest.approx(fulltext["koala"])
    with TestClient(create_app(services=make_services(rag_rerank_policy="v1"))) as seed_policy:
        assert scores(seed_policy)["koala"] == pytest.approx(hybrid["koala"])


def test_min_score_drops_results_below_it_before_the_top_k_cut(corpus):
    everything = search(corpus, query="澳洲的动物")
    ranked = sorted(h["score"] for h in everything["results"])
    threshold = (ranked[0] + ranked[-1]) / 2
    body = search(corpus, query="澳洲的动物", min_score=threshold)
    kept = [h["score"] for h in body["results"]]
    assert kept
    assert all(s >= threshold for s in kept)
    assert len(kept) < len(ranked)
    assert body["diagnostics"]["scores"]["min_score"] == threshold
    assert body["diagnostics"]["scores"]["below_min_score"] >= len(ranked) - len(kept)
    assert body["diagnostics"]["empty_reason"] is None


def test_an_empty_result_after_min_score_says_so(corpus):
    body = search(corpus, query="澳洲的动物", min_score=1.0)
    assert body["results"] == []
    assert body["matched_count"] > 0  # there were candidates: min_score removed them
    assert body["diagnostics"]["empty_reason"] == "min_score"
    assert body["diagnostics"]["scores"]["below_min_score"] == body["matched_count"]


@pytest.mark.parametrize("bad", [-0.01, 1.01, "high", None])
def test_min_score_outside_the_unit_interval_is_a_422_naming_it(corpus, bad):
    for path, body in (("/search", {"query": "澳洲"}), ("/chat", {"message": "澳洲"})):
        if bad is None:
            continue  # null means no threshold
        response = corpus.post(path, json={**body, "min_score": bad})
        assert response.status_code == 422
        assert "min_score" in response.text


def test_chat_min_score_filters_its_evidence_and_an_empty_retrieval_is_explicit(corpus):
    response = corpus.post("/chat", json={"message": "尤金袋鼠分布在哪些地区？", "min_score": 1.0})
    assert response.status_code == 200, response.text
    body = response.json()
    retrieval = body["diagnostics"]["retrieval"]
    assert retrieval["empty_reason"] == "min_score"
    assert retrieval["scores"]["min_score"] == 1.0
    assert body["sources"] == [] or all(not s["in_context"] for s in body["sources"])
    kept = corpus.post("/chat", json={"message": "尤金袋鼠分布在哪些地区？", "min_score": 0.0}).json()
    assert any(s["external_id"] == "kangaroo" for s in kept["sources"])
