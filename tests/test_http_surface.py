"""The HTTP surface a public deployment needs: CORS allow-list, per-caller rate limits, request ids,
and error bodies without internals."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.api.limits import RateLimiter


def make_client(make_services, **overrides) -> TestClient:
    client = TestClient(create_app(services=make_services(**overrides)))
    client.__enter__()
    return client


def test_cors_answers_only_the_allowed_origins(make_services):
    client = make_client(make_services, cors_origins=["https://chat.example.com"])
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    allowed = client.options("/search", headers={"Origin": "https://chat.example.com", **preflight})
    assert allowed.headers["access-control-allow-origin"] == "https://chat.example.com"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    other = client.options("/search", headers={"Origin": "https://evil.example.net", **preflight})
    assert "access-control-allow-origin" not in other.headers
    response = client.get("/health", headers={"Origin": "https://chat.example.com"})
    assert "x-request-id" in response.headers["access-control-expose-headers"].lower()


def test_a_browser_mcp_client_passes_the_preflight_of_an_allowed_origin(make_services):
    client = make_client(make_services, cors_origins=["https://chat.example.com"])
    preflight = {
        "Origin": "https://chat.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
    }
    allowed = client.options("/mcp", headers=preflight)
    assert allowed.status_code == 200
    assert "mcp-protocol-version" in allowed.headers["access-control-allow-headers"].lower()


def test_without_an_allow_list_no_cross_origin_call_is_allowed(client):
    response = client.get("/health", headers={"Origin": "https://chat.example.com"})
    assert "access-control-allow-origin" not in response.headers


def test_a_caller_over_its_limit_gets_429_with_retry_after_and_others_are_unaffected(make_services):
    client = make_client(make_services, rate_limit_search_per_minute=3)
    for _ in range(3):
        assert client.post("/search", json={"query": "袋鼠"}).status_code == 200
    refused = client.post("/search", json={"query": "袋鼠"})
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "RATE_LIMIT_SEARCH_PER_MINUTE" in refused.json()["detail"]
    # Other route groups keep their own budget.
    assert client.post("/chat", json={"message": "袋鼠在哪里？"}).status_code == 200


def test_the_bucket_refills_with_time():
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    assert [limiter.take("u", "chat", 2) for _ in range(2)] == [None, None]
    wait = limiter.take("u", "chat", 2)
    assert wait == pytest.approx(30.0)
    assert limiter.take("v", "chat", 2) is None  # another caller
    now[0] += 30.0
    assert limiter.take("u", "chat", 2) is None
    assert limiter.take("u", "chat", 0) is None  # 0: unlimited


def test_every_response_carries_a_request_id_that_errors_and_logs_repeat(client, caplog):
    given = client.get("/health", headers={"X-Request-ID": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = client.get("/health", headers={"X-Request-ID": "bad id with spaces"})
    assert made.headers["x-request-id"] != "bad id with spaces"
    assert len(made.headers["x-request-id"]) == 32
    missing = client.get("/documents/00000000-0000-0000-0000-00000000abcd", headers={"X-Request-ID": "r-404"})
    assert missing.status_code == 404
    assert missing.json()["request_id"] == "r-404"
    invalid = client.post("/search", json={"query": ""}, headers={"X-Request-ID": "r-422"})
    assert invalid.json()["request_id"] == "r-422"

    from backend.api.request_context import RequestIdLogFilter

    caplog.handler.addFilter(RequestIdLogFilter())
    with caplog.at_level(logging.INFO, logger="backend.search.report"):
        client.post("/search", json={"query": "袋鼠"}, headers={"X-Request-ID": "r-log"})
    assert any(getattr(r, "request_id", None) == "r-log" for r in caplog.records)


def test_an_unexpected_failure_is_a_json_500_without_internals(client, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("/srv/pgrag/backend/secret.py: select * from users")

    monkeypatch.setattr("backend.search.service.RetrievalService.search", boom)
    response = client.post("/search", json={"query": "袋鼠"}, headers={"X-Request-ID": "r-500"})
    assert response.status_code == 500
    body = response.json()
    assert body == {
        "detail": "internal error; it has been logged",
        "error": "InternalError",
        "request_id": "r-500",
    }
    assert response.headers["x-request-id"] == "r-500"
