"""The web result cache in Postgres: a repeated question does not pay the provider twice."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from psycopg_pool import ConnectionPool

from backend.auth import LOCAL_USER_ID, SHARED_SCOPE
from backend.db.connection import configure_connection
from backend.web import PostgresWebCache, SearchOptions, WaitBudget, create_web_search, web_only

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)


@pytest.fixture
def pool(database_url, db):
    with ConnectionPool(database_url, min_size=1, max_size=2, configure=configure_connection) as pool:
        yield pool


def ask(settings, cache, *queries, options=None, caller=LOCAL_USER_ID):
    """Each query of `caller` through a fresh WebSearch (as separate requests would), sharing one cache."""

    async def go():
        outcomes = []
        for query in queries:
            web = create_web_search(settings, cache=cache)
            try:
                legs = web.legs(query, caller=caller, options=options)
                outcomes.append(await web_only(legs, WaitBudget(5, 5)))
            finally:
                await web.aclose()
        return outcomes

    return asyncio.run(go())


def test_a_repeated_question_is_answered_from_the_cache(fake_web, web_settings, pool):
    cache = PostgresWebCache(pool)
    first, second, respaced = ask(
        web_settings(), cache, "大熊猫 吃 竹子", "大熊猫 吃 竹子", "  大熊猫   吃 竹子 "
    )
    assert fake_web.count() == 1
    assert [r.url for r in second.web] == [r.url for r in first.web] == [r.url for r in respaced.web]
    assert second.web[0].fetched_at == first.web[0].fetched_at  # when the provider was asked, not now
    assert first.diagnostics.providers[0]["cached"] is False
    assert second.diagnostics.providers[0]["cached"] is True
    assert second.diagnostics.providers[0]["attempts"] == 0


def test_a_callers_entry_is_never_anothers(fake_web, web_settings, pool, db):
    """B asking what A asked learns nothing from the cache: B's search goes to the provider, its
    diagnostics say so (not cached, one attempt), and A's own repeat is still a hit."""
    cache, settings = PostgresWebCache(pool), web_settings()
    [first_a] = ask(settings, cache, "大熊猫 吃 竹子", caller=A)
    [b_asks] = ask(settings, cache, "大熊猫 吃 竹子", caller=B)
    [service] = ask(settings, cache, "大熊猫 吃 竹子", caller=SHARED_SCOPE)
    [again_a] = ask(settings, cache, "大熊猫 吃 竹子", caller=A)
    assert first_a.diagnostics.providers[0]["cached"] is False
    for other in (b_asks, service):
        assert other.diagnostics.providers[0]["cached"] is False
        assert other.diagnostics.providers[0]["attempts"] >= 1
    assert again_a.diagnostics.providers[0]["cached"] is True
    assert again_a.diagnostics.providers[0]["attempts"] == 0
    assert fake_web.count() == 3
    callers = db.execute("select caller from web_search_cache order by caller").fetchall()
    assert [c[0] for c in callers] == [SHARED_SCOPE, A, B]


def test_the_cache_keeps_no_question(fake_web, web_settings, pool, db):
    ask(web_settings(), PostgresWebCache(pool), "Kilimanjaro zq7731marker")
    [row] = db.execute("select row_to_json(w)::text from web_search_cache w").fetchall()
    assert "zq7731marker" not in row[0].casefold()
    assert fake_web.count() == 1


def test_other_options_or_another_question_ask_the_provider(fake_web, web_settings, pool):
    cache = PostgresWebCache(pool)
    settings = web_settings()
    ask(settings, cache, "Rosetta Stone", "Kilimanjaro")
    ask(settings, cache, "Rosetta Stone", options=SearchOptions(max_results=2))
    assert fake_web.count() == 3


def test_expired_entries_are_not_used(fake_web, web_settings, pool, db):
    cache = PostgresWebCache(pool)
    ask(web_settings(), cache, "sourdough starter")
    db.execute(
        "update web_search_cache set fetched_at = now() - interval '2 s', expires_at = now() - interval '1 s'"
    )
    ask(web_settings(), cache, "sourdough starter")
    assert fake_web.count() == 2


def test_failures_are_not_cached_and_a_zero_ttl_disables_the_cache(fake_web, web_settings, pool, db):
    cache = PostgresWebCache(pool)
    settings = web_settings(web_max_retries=0)
    [failed] = ask(settings, cache, "panda fake:503x1")
    assert failed.diagnostics.providers[0]["status"] == "error"
    ask(settings, cache, "panda fake:503x1")  # the provider has recovered: asked again, then cached
    assert fake_web.count() == 2
    assert db.execute("select count(*) from web_search_cache").fetchone()[0] == 1

    ask(web_settings(web_cache_ttl_s=0), cache, "都江堰", "都江堰")
    assert fake_web.count() == 4


def test_a_broken_cache_costs_a_request_not_the_answer(fake_web, web_settings):
    class BrokenCache:
        async def get(self, **kwargs):
            raise OSError("database unreachable")

        async def put(self, **kwargs):
            raise OSError("database unreachable")

    [outcome] = ask(web_settings(), BrokenCache(), "Rosetta Stone")
    assert outcome.web
    assert outcome.diagnostics.providers[0]["status"] == "ok"


def test_the_cache_table_has_row_level_security_and_no_policies(db):
    enabled = db.execute(
        "select relrowsecurity from pg_class where oid = 'public.web_search_cache'::regclass"
    )
    assert enabled.fetchone()[0] is True
    policies = db.execute("select count(*) from pg_policies where tablename = 'web_search_cache'").fetchone()
    assert policies[0] == 0
