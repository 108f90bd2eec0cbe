"""Soft-wait: local retrieval and the web legs run together; a slow web leg is cut at its soft deadline
(its connection really dropped), failures are diagnostics, the local leg has a hard timeout."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from backend.auth import SHARED_SCOPE
from backend.errors import InvalidInput
from backend.web import (
    SearchOptions,
    TavilyProvider,
    WaitBudget,
    WebSearch,
    create_web_search,
    soft_wait,
    web_only,
)
from backend.web.retry import RetryPolicy

POLICY = RetryPolicy(timeout_s=30.0, max_retries=0)


async def local_result(value="local evidence", delay=0.0):
    await asyncio.sleep(delay)
    return value


def run(web_search_factory, local, query, budget):
    async def go():
        web = web_search_factory()
        try:
            return await soft_wait(local, web.legs(query, caller=SHARED_SCOPE), budget)
        finally:
            await web.aclose()

    return asyncio.run(go())


def test_a_fast_web_leg_is_used_with_the_local_result(fake_web, web_settings):
    outcome = run(lambda: create_web_search(web_settings()), local_result(), "大熊猫 竹子", WaitBudget(5, 2))
    assert outcome.local == "local evidence"
    assert outcome.web
    assert outcome.web[0].url == fake_web.page_url("giant-panda")
    d = outcome.diagnostics
    assert (d.local_timeout, d.web_timeout, d.soft_deadline_ms) == (False, False, 2000)
    [provider] = d.providers
    assert (provider["provider"], provider["status"], provider["results"]) == (
        "tavily",
        "ok",
        len(outcome.web),
    )


def test_a_provider_slower_than_the_soft_deadline_is_cut_and_its_connection_dropped(fake_web, web_settings):
    started = time.monotonic()
    outcome = run(
        lambda: create_web_search(web_settings(web_timeout_s=60)),
        local_result(delay=0.05),
        "rosetta fake:hang=30",
        WaitBudget(local_timeout_s=5, soft_wait_s=0.5),
    )
    elapsed = time.monotonic() - started
    assert elapsed < 3  # the deadline is 0.5 s; the fake would answer after 30 s
    assert outcome.local == "local evidence"
    assert outcome.web == []
    d = outcome.diagnostics
    assert d.web_timeout
    assert not d.local_timeout
    assert 300 <= d.soft_wait_ms <= 2500
    assert d.providers[0]["status"] == "timeout"
    assert "soft deadline" in d.providers[0]["error"]
    assert fake_web.wait_for_disconnects(1)  # the request was aborted, not left running


def test_results_that_arrived_are_kept_while_a_slower_provider_is_cut(fake_web):
    async def go():
        async with httpx.AsyncClient() as client:

            def tavily(name):
                provider = TavilyProvider(
                    client, api_key=fake_web.api_key, base_url=fake_web.base_url, policy=POLICY
                )
                provider.name = name
                return provider

            fast, slow = tavily("fast"), tavily("slow")
            web = WebSearch([fast, slow], options=SearchOptions())
            legs = web.legs("kilimanjaro summit", caller=SHARED_SCOPE)
            legs[1].query += " fake:hang=30"
            return await soft_wait(local_result(), legs, WaitBudget(5, 0.5))

    outcome = asyncio.run(go())
    assert [r.url for r in outcome.web] == [fake_web.page_url("kilimanjaro")]
    statuses = {p["provider"]: p["status"] for p in outcome.diagnostics.providers}
    assert statuses == {"fast": "ok", "slow": "timeout"}
    assert fake_web.wait_for_disconnects(1)


def test_the_web_is_not_cut_while_local_retrieval_is_still_running(fake_web, web_settings):
    outcome = run(
        lambda: create_web_search(web_settings()),
        local_result(delay=0.8),
        "sourdough starter fake:latency=400",
        WaitBudget(local_timeout_s=5, soft_wait_s=0.2),
    )
    assert outcome.web
    assert not outcome.diagnostics.web_timeout
    assert outcome.diagnostics.soft_wait_ms < 100


def test_local_retrieval_past_its_hard_timeout_is_reported_and_the_web_still_answers(fake_web, web_settings):
    outcome = run(
        lambda: create_web_search(web_settings()),
        local_result(delay=30),
        "Rosetta Stone",
        WaitBudget(local_timeout_s=0.3, soft_wait_s=2),
    )
    assert outcome.local is None
    assert outcome.diagnostics.local_timeout
    assert outcome.web
    assert not outcome.diagnostics.web_timeout


def test_a_provider_that_is_down_is_a_diagnostic_not_an_exception(fake_web, web_settings):
    outcome = run(
        lambda: create_web_search(web_settings(web_max_retries=1)),
        local_result(),
        "panda fake:503",
        WaitBudget(5, 5),
    )
    assert outcome.local == "local evidence"
    assert outcome.web == []
    [provider] = outcome.diagnostics.providers
    assert (provider["status"], provider["error_kind"], provider["attempts"]) == ("error", "unavailable", 2)
    assert "HTTP 503" in provider["error"]


def test_a_local_error_is_raised_unchanged_and_the_web_leg_is_cancelled(fake_web, web_settings):
    async def failing():
        await asyncio.sleep(0.2)
        raise InvalidInput("the question is empty")

    started = time.monotonic()
    with pytest.raises(InvalidInput, match="the question is empty"):
        run(lambda: create_web_search(web_settings()), failing(), "panda fake:hang=30", WaitBudget(5, 10))
    assert time.monotonic() - started < 3  # not the 10 s soft deadline
    assert fake_web.wait_for_disconnects(1)


def test_without_a_provider_no_request_is_made(fake_web, web_settings):
    outcome = run(
        lambda: create_web_search(web_settings(web_search_provider="none")),
        local_result(),
        "大熊猫",
        WaitBudget(5, 2),
    )
    assert (outcome.local, outcome.web, outcome.diagnostics.providers) == ("local evidence", [], [])
    assert fake_web.count() == 0


def test_web_only_with_deep_reads_fills_in_page_text(fake_web, web_settings):
    async def go():
        web = create_web_search(web_settings(web_deep_read_top_n=1))
        try:
            return await web_only(web.legs("都江堰 李冰", caller=SHARED_SCOPE), WaitBudget(5, 5))
        finally:
            await web.aclose()

    outcome = asyncio.run(go())
    top = outcome.web[0]
    assert top.url == fake_web.page_url("dujiangyan")
    assert "宝瓶口" in (top.raw_content or "")
    assert outcome.diagnostics.providers[0]["pages_read"] == 1
    assert outcome.diagnostics.local_ms is None


def test_budgets_per_mode(web_settings):
    settings = web_settings(web_soft_wait_ms=1500, web_local_timeout_s=20)
    assert WaitBudget.for_mode(settings, "chat") == WaitBudget(20, 1.5)
    assert WaitBudget.for_mode(settings, "research") == WaitBudget(20, 100)  # min(5 x 20 s, 300 s)
    assert WaitBudget.for_mode(web_settings(web_local_timeout_s=90), "research").soft_wait_s == 300
