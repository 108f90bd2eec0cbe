"""infer_filters on /search and /chat: the effective filter (applied_where), matched_count, the text that
is searched, user filters winning, relax when inferred filters leave nothing (issue 15, item 2)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

NOW = datetime(2025, 6, 18, 9, 30, tzinfo=UTC)
WHERE_DOCS = [
    {
        "external_id": "invoice-zh",
        "title": "发票报销流程",
        "content": "报销发票需要先在系统中提交申请，再由财务审核发票的真伪和金额。",
        "metadata": {"tags": ["发票", "财务"], "created_at": "2024-03-02T10:00:00+00:00"},
    },
    {
        "external_id": "invoice-en",
        "title": "Invoice reimbursement",
        "content": "To get an invoice reimbursed, submit it in the finance system and wait for approval.",
        "metadata": {"tags": ["发票"], "created_at": "2025-06-15T10:00:00+00:00"},
    },
    {
        "external_id": "travel-zh",
        "title": "差旅规定",
        "content": "出差住宿标准为每晚五百元，机票须提前七天预订，报销时附上行程单。",
        "metadata": {"tags": ["差旅"], "created_at": "2025-06-16T08:00:00+00:00"},
    },
]


@pytest.fixture
def corpus(client, services):
    services.retrieval.where.clock = lambda: NOW
    response = client.post("/documents/batch", json={"documents": WHERE_DOCS})
    assert response.status_code == 200
    return client


def search(client, **body):
    response = client.post("/search", json={"dynamic": False, "top_k": 5, **body})
    assert response.status_code == 200, response.text
    return response.json()


def ids(body):
    return [r["external_id"] for r in body["results"]]


def test_without_infer_filters_the_question_sets_no_filter(corpus):
    body = search(corpus, query="关于发票报销的英文资料")
    assert body["applied_where"] == {}
    where = body["diagnostics"]["where"]
    assert where["method"] == "none"
    assert where["conditions"] == []
    assert body["diagnostics"]["query"] == "关于发票报销的英文资料"  # searched as asked
    assert len(body["results"]) == 3


def test_language_inferred_and_removed_from_the_searched_text(corpus):
    body = search(corpus, query="关于报销的英文资料", infer_filters=True)
    assert body["applied_where"] == {"lang": {"$eq": "en"}}
    assert ids(body) == ["invoice-en"]
    where = body["diagnostics"]["where"]
    assert where["method"] == "rules"
    assert where["inferred"] == {"lang": {"$eq": "en"}}
    assert where["user"] == {}
    assert where["question"] == "关于报销的英文资料"
    assert "英文" not in where["retrieval_query"]
    assert "报销" in where["retrieval_query"]
    assert body["diagnostics"]["query"] == where["retrieval_query"]
    assert body["matched_count"] == body["diagnostics"]["stages"]["prefetch"]["count"] == 1


def test_a_known_tag_named_in_the_question_filters_and_stays_in_the_text(corpus):
    body = search(corpus, query="差旅住宿标准是多少", infer_filters=True)
    assert body["applied_where"] == {"tags": {"$contains": "差旅"}}
    assert ids(body) == ["travel-zh"]
    assert "差旅" in body["diagnostics"]["where"]["retrieval_query"]


def test_the_users_filter_wins_on_the_same_field_and_combines_with_the_others(corpus):
    body = search(corpus, query="财务的英文资料", infer_filters=True, filters={"lang": "zh"})
    where = body["diagnostics"]["where"]
    assert where["user"] == {"lang": "zh"}
    status = {c["field"]: c["status"] for c in where["conditions"]}
    assert status == {"lang": "overridden", "tags": "applied"}
    assert body["applied_where"] == {"lang": "zh", "tags": {"$contains": "财务"}}
    assert ids(body) == ["invoice-zh"]


def test_relax_drops_the_inferred_part_once_and_says_so(corpus):
    body = search(corpus, query="#报税 发票怎么报销", infer_filters=True)
    where = body["diagnostics"]["where"]
    assert where["relaxed"] is True
    assert where["dropped"] == {"tags": {"$contains": ["报税"]}}
    assert where["matched_count_before_relax"] == 0
    assert [c["status"] for c in where["conditions"]] == ["relaxed"]
    assert body["applied_where"] == {}
    assert body["results"]
    assert body["matched_count"] > 0
    assert body["diagnostics"]["empty_reason"] is None


def test_relax_never_drops_the_users_own_filters(corpus):
    body = search(corpus, query="#报税 发票", infer_filters=True, filters={"lang": "en"})
    assert body["diagnostics"]["where"]["relaxed"] is True
    assert body["applied_where"] == {"lang": "en"}
    assert ids(body) == ["invoice-en"]


def test_relax_switched_off_per_request_gives_an_explicit_empty_result(corpus):
    body = search(corpus, query="#报税 发票怎么报销", infer_filters=True, relax=False)
    assert body["results"] == []
    assert body["matched_count"] == 0
    assert body["diagnostics"]["where"]["relaxed"] is False
    assert body["diagnostics"]["where"]["relax_enabled"] is False
    assert body["diagnostics"]["empty_reason"] == "filter"
    assert body["applied_where"] == {"tags": {"$contains": ["报税"]}}


def test_relax_switched_off_by_the_setting_and_back_on_per_request(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    services = make_services(where_relax_enabled=False)
    with TestClient(create_app(services=services)) as client:
        assert client.post("/documents/batch", json={"documents": WHERE_DOCS}).status_code == 200
        off = search(client, query="#报税 发票", infer_filters=True)
        assert off["results"] == []
        assert off["diagnostics"]["where"]["relax_enabled"] is False
        on = search(client, query="#报税 发票", infer_filters=True, relax=True)
        assert on["results"]
        assert on["diagnostics"]["where"]["relaxed"] is True


def test_a_time_expression_becomes_a_date_range_on_created_at(corpus):
    body = search(corpus, query="去年的报销流程", infer_filters=True)
    where = body["diagnostics"]["where"]
    (condition,) = where["conditions"]
    assert condition["field"] == "created_at"
    assert condition["phrase"] == "去年"
    assert condition["condition"] == {"$gte": "2024-01-01T00:00:00+00:00", "$lt": "2025-01-01T00:00:00+00:00"}
    # The filter grammar (issue 15 item 1) serves ranges: the range is applied in SQL and the words
    # that only scoped the question are not searched.
    assert condition["status"] == "applied"
    assert where["retrieval_query"] == "报销流程"
    assert ids(body) == ["invoice-zh"]
    assert body["applied_where"]


def test_english_time_and_language_in_one_question(corpus):
    body = search(corpus, query="invoice documents in English from the past week", infer_filters=True)
    conditions = {c["field"]: c for c in body["diagnostics"]["where"]["conditions"]}
    assert conditions["lang"]["condition"] == {"$eq": "en"}
    assert conditions["lang"]["status"] == "applied"
    assert conditions["created_at"]["condition"] == {"$gte": "2025-06-11T09:30:00+00:00"}
    assert ids(body) == ["invoice-en"]
    assert body["diagnostics"]["where"]["retrieval_query"] == "invoice documents"


def test_bad_user_filters_are_a_422_even_with_infer_filters(corpus):
    response = corpus.post("/search", json={"query": "发票", "infer_filters": True, "filters": {"pw": 1}})
    assert response.status_code == 422
    assert "pw" in response.json()["detail"]


def test_chat_infers_filters_for_its_searches_and_reports_them(corpus):
    response = corpus.post("/chat", json={"message": "关于报销的英文资料怎么说？", "infer_filters": True})
    assert response.status_code == 200, response.text
    body = response.json()
    retrieval = body["diagnostics"]["retrieval"]
    assert retrieval["where"]["applied_where"] == {"lang": {"$eq": "en"}}
    # what the SQL legs applied (the filter compiler's form of applied_where)
    assert body["diagnostics"]["evidence"]["options"]["filters"] == retrieval["parameters"]["filters"]
    assert "en" in str(retrieval["parameters"]["filters"])
    assert {s["external_id"] for s in body["sources"]} <= {"invoice-en"}


def test_a_year_about_the_content_sets_no_date_filter(corpus):
    body = search(corpus, query="2024年发票报销的流程是什么", infer_filters=True)
    where = body["diagnostics"]["where"]
    assert [c["field"] for c in where["conditions"]] == ["tags"]  # 发票, a known tag; no created_at
    assert "created_at" not in body["applied_where"]
    assert "2024年" in where["retrieval_query"]  # the year stays part of what is searched


def test_a_year_tied_to_documents_filters_their_dates(corpus):
    body = search(corpus, query="2024年上传的报销资料", infer_filters=True)
    assert body["applied_where"] == {
        "created_at": {"$gte": "2024-01-01T00:00:00+00:00", "$lt": "2025-01-01T00:00:00+00:00"}
    }
    assert ids(body) == ["invoice-zh"]
    assert body["diagnostics"]["where"]["conditions"][0]["phrase"] == "2024年"


def test_days_ago_is_that_calendar_day(corpus):
    body = search(corpus, query="三天前上传的资料", infer_filters=True)  # now: 2025-06-18, UTC
    assert body["applied_where"] == {
        "created_at": {"$gte": "2025-06-15T00:00:00+00:00", "$lt": "2025-06-16T00:00:00+00:00"}
    }
    assert ids(body) == ["invoice-en"]


def test_english_pdf_filters_language_and_file_type(client, services):
    services.retrieval.where.clock = lambda: NOW
    pdf = {
        "external_id": "invoice-pdf",
        "title": "Invoice policy (PDF)",
        "content": "Invoices above 500 euros need a second approval before reimbursement.",
        "metadata": {"content_type": "application/pdf", "lang": "en"},
    }
    response = client.post("/documents/batch", json={"documents": [*WHERE_DOCS, pdf]})
    assert response.status_code == 200
    body = search(client, query="英文PDF里的报销规定", infer_filters=True)
    assert body["applied_where"] == {"lang": {"$eq": "en"}, "content_type": {"$eq": "application/pdf"}}
    assert ids(body) == ["invoice-pdf"]
    assert body["diagnostics"]["where"]["retrieval_query"] == "报销规定"
