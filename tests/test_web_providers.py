"""Web search providers against the local fake web: the Tavily and SearXNG contracts, retries with
backoff and Retry-After, timeouts, the concurrency cap, and keys that never leak."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest

from backend.errors import WebSearchError
from backend.testing.fake_web_state import Behaviour
from backend.web import SearchOptions, SearxngProvider, TavilyProvider, create_provider
from backend.web.retry import RetryPolicy, retry_after_seconds
from tests.fake_http import serve

FAST = RetryPolicy(timeout_s=2.0, max_retries=2, backoff_base_s=0.01, backoff_max_s=2.0)


def tavily_search(fake_web, query, *, options=None, policy=FAST, key=None, **kwargs):
    async def go():
        async with httpx.AsyncClient() as client:
            provider = TavilyProvider(
                client, api_key=key or fake_web.api_key, base_url=fake_web.base_url, policy=policy, **kwargs
            )
            return await provider.search(query, options or SearchOptions())

    return asyncio.run(go())


def test_tavily_sends_the_documented_contract_and_parses_typed_results(fake_web):
    options = SearchOptions(max_results=3, include_raw_content=True, exclude_domains=("news.example.cn",))
    response = tavily_search(fake_web, "大熊猫 每天 吃 多少 竹子", options=options)

    [request] = fake_web.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["Authorization"] == f"Bearer {fake_web.api_key}"
    top = response.results[0]
    assert top.url == fake_web.page_url("giant-panda")
    assert (top.title, top.provider) == ("大熊猫", "tavily")
    assert "竹子" in top.content
    assert 0 < top.score <= 1
    assert top.raw_content
    assert "百分之九十九是竹子" in top.raw_content
    assert "版权所有" not in top.raw_content  # the fake serves page text, not its chrome
    assert top.fetched_at.tzinfo is not None
    assert top.published_date == "2024-06-01"
    assert (response.attempts, response.cached) == (1, False)
    assert len(response.results) <= 3


def test_tavily_domain_lists_reach_the_provider(fake_web):
    only_wiki = SearchOptions(include_domains=("wiki.example.org",))
    response = tavily_search(fake_web, "Rosetta Stone hieroglyphs honey bee dance", options=only_wiki)
    assert response.results
    assert all("wiki.example.org" in r.url for r in response.results)


def test_a_wrong_key_is_rejected_once_with_a_hint_and_the_key_never_appears(fake_web, caplog):
    secret = "tvly-SECRET-0123456789"
    fake_web.register("leak probe", [])
    with caplog.at_level(logging.DEBUG), pytest.raises(WebSearchError) as info:
        tavily_search(fake_web, "leak probe", key=secret)
    assert (info.value.kind, info.value.status, info.value.attempts) == ("rejected", 401, 1)
    assert "TAVILY_API_KEY" in str(info.value)
    assert fake_web.count() == 1  # a 401 is not retried
    assert secret not in str(info.value)
    assert secret not in caplog.text


def test_429_waits_for_retry_after_then_succeeds(fake_web):
    started = time.monotonic()
    response = tavily_search(fake_web, "kilimanjaro summit fake:429x1 fake:retry-after=0.5")
    assert time.monotonic() - started >= 0.5  # honoured, not replaced by the short jittered backoff
    assert response.attempts == 2
    assert response.results
    assert fake_web.count() == 2


def test_a_retry_after_longer_than_the_backoff_cap_gives_up_at_once(fake_web):
    with pytest.raises(WebSearchError) as info:
        tavily_search(fake_web, "kilimanjaro fake:429 fake:retry-after=60")
    assert info.value.kind == "rate_limited"
    assert "retry after 60 s" in str(info.value)
    assert fake_web.count() == 1


def test_5xx_is_retried_with_backoff_until_the_retries_run_out(fake_web):
    recovered = tavily_search(fake_web, "sourdough starter fake:503x2")
    assert recovered.attempts == 3
    assert recovered.results

    with pytest.raises(WebSearchError) as info:
        tavily_search(fake_web, "sourdough starter fake:500")
    assert (info.value.kind, info.value.status, info.value.attempts) == ("unavailable", 500, 3)
    assert fake_web.count() == 3 + 3


def test_a_provider_slower_than_the_timeout_fails_as_timeout_within_the_bound(fake_web):
    policy = RetryPolicy(timeout_s=0.3, max_retries=1, backoff_base_s=0.01)
    started = time.monotonic()
    with pytest.raises(WebSearchError) as info:
        tavily_search(fake_web, "rosetta fake:hang=30", policy=policy)
    assert info.value.kind == "timeout"
    assert info.value.attempts == 2
    assert time.monotonic() - started < 3  # 2 x 0.3 s plus backoff, not the 30 s the server sleeps
    assert fake_web.wait_for_disconnects(2)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"<html>maintenance</html>", "text/html"), (b'{"answer": "no results key"}', "application/json")],
)
def test_a_200_that_is_not_a_results_document_is_a_bad_response(body, content_type):
    with serve(lambda path, headers, payload: (200, body, content_type)) as base_url:
        with pytest.raises(WebSearchError) as info:
            asyncio.run(_search_at(base_url))
    assert info.value.kind == "bad_response"
    assert info.value.attempts == 1


async def _search_at(base_url):
    async with httpx.AsyncClient() as client:
        provider = TavilyProvider(client, api_key="k", base_url=base_url, policy=FAST)
        return await provider.search("anything", SearchOptions())


def test_concurrency_is_capped_per_provider(fake_web):
    fake_web.behaviour = Behaviour(latency_ms=150)

    async def go():
        async with httpx.AsyncClient() as client:
            provider = TavilyProvider(
                client, api_key=fake_web.api_key, base_url=fake_web.base_url, policy=FAST, max_concurrency=2
            )
            return await asyncio.gather(*(provider.search(f"panda {i}", SearchOptions()) for i in range(6)))

    asyncio.run(go())
    assert fake_web.count() == 6
    assert fake_web.max_in_flight == 2


def test_searxng_json_api_is_parsed_and_domain_lists_applied_locally(fake_web):
    async def go(query, options):
        async with httpx.AsyncClient() as client:
            provider = SearxngProvider(client, base_url=fake_web.base_url, policy=FAST)
            return await provider.search(query, options)

    response = asyncio.run(go("Rosetta Stone British Museum", SearchOptions()))
    assert response.results[0].url == fake_web.page_url("rosetta-stone")
    assert response.results[0].provider == "searxng"
    assert response.results[0].published_date
    [request] = fake_web.requests
    assert (request.method, request.path, request.query) == ("GET", "/search", "Rosetta Stone British Museum")

    hits = [{"url": f"https://{host}/a", "title": host, "content": "x", "score": 0.5} for host in HOSTS]
    fake_web.register("mixed hosts", hits)
    denied = asyncio.run(go("mixed hosts", SearchOptions(exclude_domains=("ads.example",))))
    assert [r.title for r in denied.results] == ["wiki.example.org", "news.example.cn"]
    allowed = asyncio.run(go("mixed hosts", SearchOptions(max_results=1, include_domains=("example.cn",))))
    assert [r.title for r in allowed.results] == ["news.example.cn"]


HOSTS = ("wiki.example.org", "tracker.ads.example", "news.example.cn")


def test_factory_chooses_from_settings(web_settings):
    async def kinds(**overrides):
        async with httpx.AsyncClient() as client:
            provider = create_provider(web_settings(**overrides), client)
            return provider.name if provider else None

    assert asyncio.run(kinds()) == "tavily"
    assert asyncio.run(kinds(web_search_provider="searxng", searxng_url="http://127.0.0.1:1")) == "searxng"
    assert asyncio.run(kinds(web_search_provider="none")) is None


def test_retry_after_accepts_seconds_and_http_dates():
    from datetime import UTC, datetime

    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("Wed, 01 Jan 2025 12:00:05 GMT", now=now) == 5.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
