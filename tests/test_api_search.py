"""POST /search: the three stages, their diagnostics, dynamic top-k edges and 4xx errors."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.confidence.policy import POLICIES_DIR
from tests.factories import SEARCH_DOCS as DOCS


@pytest.fixture
def corpus(client):
    response = client.post("/documents/batch", json={"documents": DOCS})
    assert response.status_code == 200
    return client


def test_chinese_query_ranks_the_matching_document_first_with_diagnostics(corpus):
    body = corpus.post("/search", json={"query": "尤金袋鼠分布在哪些地区？"}).json()
    assert body["results"][0]["external_id"] == "kangaroo"
    top = body["results"][0]["scores"]
    assert top["full_text_rank"] == 1
    assert top["vector_rank"] is not None
    assert top["keyword_coverage"] == pytest.approx(1.0)
    d = body["diagnostics"]
    # Why this rank: each weighted feature of the policy, adding up to the policy's score.
    assert d["parameters"]["rerank_policy"] == "rerank_v2"
    assert set(top["contributions"]) == set(d["parameters"]["rerank_weights"])
    assert top["rerank_score"] == pytest.approx(sum(top["contributions"].values()), abs=1e-5)
    assert 0 < top["final_score"] <= 1  # a softmax share among the candidates
    assert d["query_term_idfs"]["袋鼠"] > 0
    assert d["mode"] == "hybrid"
    assert d["query_terms"] == ["尤金", "袋鼠", "分布", "地区"]
    assert set(d["stages"]) == {"prefetch", "rerank", "top_k", "confidence"}
    assert d["confidence"]["best_parent_id"] == body["results"][0]["document_id"]
    assert d["confidence"]["confidence_level"] in {"low", "medium", "high"}
    assert d["confidence"]["score_policy_version"] == "overall_v7"
    assert d["confidence"]["score_source"] == "answerability"  # policy v3 on: relative to the question itself
    assert d["stages"]["prefetch"]["count"] >= d["stages"]["top_k"]["count"] == len(body["results"])
    assert all(stage["ms"] >= 0 for stage in d["stages"].values())


def test_english_query_works(corpus):
    body = corpus.post("/search", json={"query": "How many points did the Panthers defense give up?"}).json()
    assert body["results"][0]["external_id"] == "panthers"


def test_dynamic_false_returns_exactly_top_k(corpus):
    body = corpus.post("/search", json={"query": "澳洲", "top_k": 3, "dynamic": False}).json()
    assert len(body["results"]) == 3


def test_modes_vector_and_fulltext(corpus):
    ft = corpus.post(
        "/search", json={"query": "桉树叶", "mode": "fulltext", "dynamic": False, "top_k": 4}
    ).json()
    assert [r["external_id"] for r in ft["results"]] == ["koala"]
    assert ft["results"][0]["scores"]["vector_rank"] is None
    vec = corpus.post(
        "/search", json={"query": "桉树叶", "mode": "vector", "top_k": 2, "dynamic": False}
    ).json()
    assert vec["mode"] == "vector"
    assert vec["results"][0]["scores"]["full_text_rank"] is None


def test_filters_restrict_results(corpus):
    body = corpus.post(
        "/search", json={"query": "澳洲", "filters": {"doc_id": "koala"}, "dynamic": False, "top_k": 5}
    ).json()
    assert [r["external_id"] for r in body["results"]] == ["koala"]
    bad = corpus.post("/search", json={"query": "澳洲", "filters": {"password": "x"}})
    assert bad.status_code == 422
    assert "password" in bad.json()["detail"]


def test_the_seed_policy_scores_by_the_seed_formula_with_its_structure_bonus(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    with TestClient(create_app(services=make_services(rag_rerank_policy="v1"))) as client:
        assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        body = client.post("/search", json={"query": "怎么安装启动系统", "dynamic": False, "top_k": 4}).json()
    assert body["diagnostics"]["parameters"]["rerank_policy"] == "rerank_v1"
    guide = [r for r in body["results"] if r["external_id"] == "guide"][0]["scores"]
    assert guide["contributions"]["heading"] == pytest.approx(0.05)
    assert guide["final_score"] == pytest.approx(
        guide["similarity"] * 0.7 + guide["keyword_coverage"] * 0.25 + 0.05, abs=1e-5
    )


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"query": ""}, 422),
        ({"query": "   "}, 422),
        ({"query": "袋鼠" * 3000}, 422),
        ({"query": "袋鼠", "top_k": 0}, 422),
        ({"query": "袋鼠", "top_k": 101}, 422),
        ({"query": "袋鼠", "mode": "magic"}, 422),
        ({}, 422),
    ],
)
def test_bad_search_requests_are_4xx_with_a_message(corpus, body, status):
    response = corpus.post("/search", json=body)
    assert response.status_code == status
    assert response.json()["detail"]


def test_query_with_another_embedding_model_is_a_409_saying_how_to_reembed(corpus, make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app
    from backend.testing import HashingEmbedder

    other = make_services(embedder=HashingEmbedder(dims=768))
    with TestClient(create_app(services=other)) as c:
        response = c.post("/search", json={"query": "澳洲"})
    assert response.status_code == 409
    assert "hashing-test@384" in response.json()["detail"]
    assert "re-embed" in response.json()["detail"]


def test_a_document_deleted_during_a_search_does_not_fail_it(corpus, services, monkeypatch):
    from backend.db.repositories import retrieval as retrieval_repo

    counts = retrieval_repo.chunk_counts

    def delete_then_count(conn, *, document_ids):
        with services.pool.connection() as other:  # another request deletes the best document
            other.execute("delete from documents where external_id = 'kangaroo'")
        return counts(conn, document_ids=document_ids)

    monkeypatch.setattr(retrieval_repo, "chunk_counts", delete_then_count)
    response = corpus.post("/search", json={"query": "尤金袋鼠分布在哪些地区？"})
    assert response.status_code == 200
    assert response.json()["results"][0]["external_id"] == "kangaroo"  # as of the search's snapshot
    monkeypatch.setattr(retrieval_repo, "chunk_counts", counts)
    after = corpus.post("/search", json={"query": "尤金袋鼠分布在哪些地区？"}).json()
    assert all(r["external_id"] != "kangaroo" for r in after["results"])


def test_the_top_k_limit_comes_from_settings_and_is_named(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    with TestClient(create_app(services=make_services(search_max_top_k=20))) as client:
        response = client.post("/search", json={"query": "袋鼠", "top_k": 21})
        assert response.status_code == 422
        assert "SEARCH_MAX_TOP_K" in response.json()["detail"]
        assert client.post("/search", json={"query": "袋鼠", "top_k": 20}).status_code == 200


def test_openapi_documents_the_diagnostics_of_search_and_chat(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    search_out = schemas["SearchOut"]["properties"]["diagnostics"]
    assert search_out["$ref"].endswith("/SearchDiagnostics")
    params = schemas["SearchParameters"]["properties"]
    assert "hybrid_search" in schemas["SearchStages"]["properties"]["prefetch"]["description"]
    assert params["drop_ratio"]["description"]
    chat = schemas["ChatDiagnostics"]["properties"]
    assert {"rewrite", "retrieval", "evidence", "confidence", "context", "citations"} <= set(chat)
    assert schemas["GapDiagnostics"]["properties"]["reason"]["description"]


def test_each_search_request_logs_one_retrieval_done_line(client, caplog):
    import logging

    client.post("/documents", json={"title": "考拉", "content": "考拉以桉树叶为食。"})
    with caplog.at_level(logging.INFO, logger="backend.search.report"):
        client.post("/search", json={"query": "考拉吃什么？"})
    done = [r.getMessage() for r in caplog.records if "retrieval done" in r.getMessage()]
    assert len(done) == 1
    assert "mode=hybrid" in done[0]
    assert "桉树" not in done[0]


@pytest.mark.parametrize("policy", ["v1", "v2", "v3"])
def test_every_shipped_confidence_policy_answers_in_the_documented_shape(make_services, policy):
    services = make_services(score_policy_version=policy, score_policies_dir=POLICIES_DIR)
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        body = client.post("/search", json={"query": "尤金袋鼠分布在哪些地区？"}).json()
    confidence = body["diagnostics"]["confidence"]
    assert confidence["score_policy_version"] == f"overall_{policy}"
    assert confidence["best_parent_id"] == body["results"][0]["document_id"]
    assert confidence["top_parents"][0]["parent_id"] == confidence["best_parent_id"]


# --- the filter grammar on /search and /chat ----------------------------------------------------------

DATED_DOCS = [
    {
        "external_id": "old-report",
        "title": "2023 年报",
        "content": "袋鼠保护区 2023 年的报告。",
        "metadata": {"tags": ["report", "animals"], "created_at": "2023-06-30"},
    },
    {
        "external_id": "new-report",
        "title": "2025 年报",
        "content": "袋鼠保护区 2025 年的报告。",
        "metadata": {"tags": ["report"], "created_at": "2025-02-01T09:00:00+08:00"},
    },
    {
        "external_id": "note",
        "title": "笔记",
        "content": "袋鼠保护区的一则笔记，没有日期。",
        "metadata": {"tags": ["animals"]},
    },
]


@pytest.fixture
def dated(client):
    assert client.post("/documents/batch", json={"documents": DATED_DOCS}).status_code == 200
    return client


def _found(client, filters) -> list[str]:
    response = client.post(
        "/search", json={"query": "袋鼠保护区", "filters": filters, "dynamic": False, "top_k": 10}
    )
    assert response.status_code == 200, response.text
    return sorted(r["external_id"] for r in response.json()["results"])


def test_range_date_and_boolean_filters_on_search(dated):
    assert _found(dated, {"created_at": {"$lt": "2024-01-01"}}) == ["old-report"]
    assert _found(dated, {"created_at": "2025-02-01"}) == ["new-report"]  # 01:00 UTC that day
    assert _found(dated, {"tags": "report", "created_at": {"$gte": "2024-01-01"}}) == ["new-report"]
    assert _found(dated, {"$or": [{"tags": {"$nin": ["report"]}}, {"created_at": "2023-06-30"}]}) == [
        "note",
        "old-report",
    ]
    assert _found(dated, {"tags": ["report", "animals"]}) == ["old-report"]  # today's list form: holds both
    body = dated.post("/search", json={"query": "袋鼠保护区", "filters": {"tags": "report"}}).json()
    prefetch = body["diagnostics"]["stages"]["prefetch"]
    assert (prefetch["plan"], prefetch["scope_count"]) == ("exact", 2)  # two chunks in scope: ranked exactly
    assert body["diagnostics"]["parameters"]["filters"] == {"tags": {"$contains": ["report"]}}


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"author": "x"}, "'author' is not allowed"),
        ({"lang": {"$like": "z%"}}, "'$like'"),
        ({"text_len": {"$gt": "many"}}, "'text_len': expected a number"),
        ({"created_at": {"$gte": "yesterday"}}, "'yesterday' is not an ISO 8601"),
    ],
)
def test_bad_filters_are_a_422_naming_the_field_or_operator(dated, filters, named):
    for route, body in (("/search", {"query": "袋鼠"}), ("/chat", {"message": "袋鼠在哪里？"})):
        response = dated.post(route, json={**body, "filters": filters})
        assert response.status_code == 422, route
        assert named in response.json()["detail"], route


def test_no_sql_can_be_injected_through_filter_keys_or_values(dated):
    hostile_keys = ["lang'); drop table chunks; --", 'lang" || true || "', "metadata->>'lang'"]
    for key in hostile_keys:
        response = dated.post("/search", json={"query": "袋鼠", "filters": {key: "zh"}})
        assert response.status_code == 422
        assert "is not allowed" in response.json()["detail"]
    hostile_values = ["zh'; drop table chunks; --", '" || true || "', "$.lang", "' or '1'='1"]
    for value in hostile_values:
        assert _found(dated, {"lang": value}) == []
        assert _found(dated, {"tags": {"$in": [value]}}) == []
    assert _found(dated, {}) == ["new-report", "note", "old-report"]  # every chunk still there
