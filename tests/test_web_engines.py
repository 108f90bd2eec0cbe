"""The research engines against their fakes (backend/testing/fake_engines.py): each one's request
contract and parsed results, and the failures every provider must turn into a typed, retried or clear
error: empty, 429 and 5xx retried, a wrong key refused once naming its setting, a body that is not JSON,
a timeout."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from backend.config import Settings
from backend.errors import WebSearchError
from backend.web import SearchOptions, create_provider

ENGINES = ("bocha", "serper", "baike", "semantic_scholar", "ncbi")
# A query each engine's fake answers, and a title its top hit has.
FOUND = {
    "bocha": ("大熊猫 每天 吃 多少 竹子", "大熊猫"),
    "serper": ("Rosetta Stone hieroglyphs", "Rosetta Stone"),
    "baike": ("张欣", "张欣（中国内地男性配音演员）"),
    "semantic_scholar": ("attention mechanisms transformer", "Attention Is All You Need"),
    "ncbi": ("CRISPR gene editing human cells", "CRISPR-Cas9 gene editing in human cells"),
}
# The setting a refused key names (S2 and NCBI keys are optional; a wrong one is refused too).
KEY_SETTING = {
    "bocha": "BOCHA_API_KEY",
    "serper": "SERPER_API_KEY",
    "baike": "BAIKE_API_KEY",
    "semantic_scholar": "SEMANTIC_SCHOLAR_API_KEY",
    "ncbi": "NCBI_API_KEY",
}


def engine_settings(fake_web, *names, **overrides) -> Settings:
    values = {
        **fake_web.engine_settings(*names),
        "web_backoff_base_s": 0.01,
        "web_allow_private_addresses": True,
        **overrides,
    }
    return Settings(_env_file=None, **values)


def run(fake_web, name, query, *, options=None, **overrides):
    settings = engine_settings(fake_web, name, **overrides)

    async def go():
        async with httpx.AsyncClient() as client:
            provider = create_provider(settings, client, name)
            assert provider is not None
            return await provider.search(query, options or SearchOptions(max_results=5))

    return asyncio.run(go())


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_finds_its_page_with_typed_results(fake_web, name):
    query, title = FOUND[name]
    response = run(fake_web, name, query)
    top = response.results[0]
    assert (top.title, top.provider) == (title, name)
    assert top.url.startswith(("http://", "https://"))
    assert top.text
    assert response.attempts >= 1


def test_bocha_sends_its_contract_and_its_ai_summary_is_off_unless_asked(fake_web):
    query = "大熊猫 每天 吃 多少 竹子"
    plain = run(fake_web, "bocha", query, options=SearchOptions(max_results=25))
    [request] = fake_web.requests
    assert (request.method, request.path) == ("POST", "/v1/web-search")
    assert request.headers["Authorization"] == f"Bearer {fake_web.api_key}"
    summarised = run(fake_web, "bocha", query, bocha_summary=True)
    # The snippet has the page's start; the summary is the fake's "AI summary" (first paragraph only)
    assert plain.results[0].content.startswith("大熊猫是中国特有的熊科动物")
    assert summarised.results[0].content != plain.results[0].content
    assert "竹子" not in summarised.results[0].content  # the detail in a later paragraph is lost


def test_bocha_request_body_carries_count_summary_and_freshness(fake_web):
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        return httpx.Response(200, json={"code": 200, "data": {"webPages": {"value": []}}})

    settings = engine_settings(fake_web, "bocha", web_max_results=25)

    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            provider = create_provider(settings, client, "bocha")
            assert provider is not None
            return await provider.search("都江堰 李冰", SearchOptions.from_settings(settings))

    assert asyncio.run(go()).results == []
    assert seen == {"query": "都江堰 李冰", "summary": False, "count": 25, "freshness": "noLimit"}


def test_serper_puts_the_answer_box_first_and_sends_x_api_key(fake_web):
    box = {"title": "Rosetta Stone - Museum", "answer": "British Museum", "link": "https://museum.example/rs"}
    fake_web.register_boxes("where is the Rosetta Stone", answerBox=box)
    response = run(fake_web, "serper", "where is the Rosetta Stone", serper_gl="us", serper_hl="en")
    [request] = fake_web.requests
    assert request.headers["X-API-KEY"] == fake_web.api_key
    assert response.results[0].url == "https://museum.example/rs"
    assert "British Museum" in response.results[0].content
    assert any(r.title == "Rosetta Stone" for r in response.results[1:])


def test_baike_lists_the_name_then_reads_the_main_entry_in_full(fake_web):
    response = run(fake_web, "baike", "张欣")
    paths = [(r.path, r.query) for r in fake_web.requests]
    assert paths[0] == ("/v2/baike/lemma/get_list_by_title", "张欣")
    assert paths[1][0] == "/v2/baike/lemma/get_content"
    assert len(paths) == 2  # BAIKE_MAX_ENTRIES=1: the main sense only
    [entry] = response.results
    assert "贞观之治" in (entry.raw_content or "")  # the full entry, with the list of works
    assert response.attempts == 2
    both = run(fake_web, "baike", "张欣", baike_max_entries=2)
    assert [r.title for r in both.results] == ["张欣（中国内地男性配音演员）", "张欣（中国内地女作家）"]


def test_an_academic_hit_carries_its_abstract_so_it_is_not_read_again(fake_web):
    for name in ("semantic_scholar", "ncbi"):
        query, _ = FOUND[name]
        top = run(fake_web, name, query).results[0]
        assert top.raw_content
        assert top.content in top.raw_content
    assert [r.path for r in fake_web.requests][-2:] == [
        "/entrez/eutils/esearch.fcgi",
        "/entrez/eutils/efetch.fcgi",
    ]


@pytest.mark.parametrize("name", ENGINES)
def test_nothing_found_is_an_empty_list_not_an_error(fake_web, name):
    query = FOUND[name][0] + " fake:empty"
    assert run(fake_web, name, query).results == []


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize(("keyword", "attempts"), [("fake:429x1", 2), ("fake:503x2", 3)])
def test_rate_limits_and_server_errors_are_retried(fake_web, name, keyword, attempts):
    query = f"{FOUND[name][0]} {keyword}"
    response = run(fake_web, name, query)
    assert response.results
    assert response.attempts >= attempts


@pytest.mark.parametrize("name", ENGINES)
def test_a_wrong_key_is_refused_once_naming_its_setting(fake_web, name):
    wrong = "WRONG-SECRET-123"
    with pytest.raises(WebSearchError) as info:
        run(fake_web, name, FOUND[name][0], **{f"{name}_api_key": wrong})
    assert info.value.kind == "rejected"
    assert info.value.attempts == 1
    assert KEY_SETTING[name] in str(info.value)
    assert wrong not in str(info.value)
    assert len(fake_web.requests) == 1


@pytest.mark.parametrize("name", ENGINES)
def test_a_body_that_is_not_json_is_a_bad_response(fake_web, name):
    with pytest.raises(WebSearchError) as info:
        run(fake_web, name, FOUND[name][0] + " fake:badjson")
    assert info.value.kind == "bad_response"


@pytest.mark.parametrize("name", ENGINES)
def test_a_hung_engine_times_out(fake_web, name):
    with pytest.raises(WebSearchError) as info:
        run(fake_web, name, FOUND[name][0] + " fake:hang=30", web_timeout_s=0.3, web_max_retries=0)
    assert info.value.kind == "timeout"
