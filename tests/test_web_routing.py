"""Engine routing (seed multi-agent-research.md: Chinese -> Bocha, English -> Serper, a pure entity name
-> Baike; evidence-retention.md: academic questions -> Semantic Scholar / NCBI), the fallback to what is
configured, explicit engines, several providers at once merged and deduplicated, and the settings that
choose them."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from pydantic import ValidationError

from backend.config import Settings
from backend.web import create_web_search, cross_source_dedup, merge_results
from backend.web.routing import classify, is_entity_name, language, route

ALL = ("bocha", "serper", "baike", "semantic_scholar", "ncbi")
CALLER = uuid.uuid4()


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("嫦娥六号带回了多少克月球背面样品？", "bocha"),
        ("李白出生在哪里", "bocha"),
        ("Transformer 模型是谁提出的？", "bocha"),  # Chinese with an English name is Chinese
        ("How tall is Mount Kilimanjaro?", "serper"),
        ("Rosetta Stone discovery 1799", "serper"),
        ("张欣", "baike"),
        ("猫眼三姐妹", "baike"),
        ("都江堰", "baike"),
        ("Marie Curie", "serper"),  # Baike's entries are Chinese: an English name is searched in English
        ("papers on graph neural networks for recommendation", "semantic_scholar"),
        ("有哪些关于大语言模型推理的论文？", "semantic_scholar"),
        ("clinical trials of CRISPR gene therapy for sickle cell disease", "ncbi"),
        ("PD-1 抑制剂治疗肺癌的临床试验文献", "ncbi"),
    ],
)
def test_the_rule_names_one_engine_per_query(text, engine):
    assert classify(text)[1][0] == engine
    assert route(text, ALL).engines[0] == engine


def test_a_question_or_a_description_is_not_an_entity_name():
    assert is_entity_name("张欣")
    for text in ("张欣是谁？", "张欣的配音作品", "介绍一下张欣", "2007年电视剧贞观之治中长孙无忌的配音演员"):
        assert not is_entity_name(text), text
    assert language("都江堰 Dujiangyan") == "zh"
    assert language("What is 都江堰?") == "zh"
    assert language("the Dujiangyan irrigation system") == "en"


def test_an_entity_name_goes_to_baike_beside_the_chinese_engine():
    chosen = route("张欣", ALL)
    assert chosen.engines == ("baike", "bocha")
    assert "entity" in chosen.reason


@pytest.mark.parametrize(
    ("text", "configured", "engines", "said"),
    [
        ("李白出生在哪里？", ("serper", "tavily"), ("tavily",), "bocha is not configured"),
        ("Who wrote Hamlet?", ("bocha",), ("bocha",), "serper is not configured"),
        ("张欣", ("bocha", "serper"), ("bocha",), "baike is not configured"),
        (
            "clinical trials of CRISPR gene therapy",
            ("semantic_scholar", "serper"),
            ("semantic_scholar",),
            "ncbi",
        ),
        ("papers on graph neural networks", ("serper", "bocha"), ("serper",), "semantic_scholar is not"),
        # only general engines: every query goes to each, as before routing existed
        ("李白出生在哪里？", ("tavily", "searxng"), ("tavily", "searxng"), "every provider"),
        ("anything", (), (), "no web provider"),
    ],
)
def test_an_engine_that_is_not_configured_falls_back_to_what_is(text, configured, engines, said):
    chosen = route(text, configured)
    assert chosen.engines == engines
    assert said in chosen.reason


def test_the_plans_engine_overrides_the_rule_when_configured():
    assert route("Who wrote Hamlet?", ALL, prefer="bocha").engines == ("bocha",)
    assert "plan" in route("Who wrote Hamlet?", ALL, prefer="bocha").reason
    assert route("Who wrote Hamlet?", ALL, prefer="bing").engines == ("serper",)  # unknown: the rule


def engine_web(fake_web, *names, **overrides):
    values = {
        **fake_web.engine_settings(*names),
        "web_allow_private_addresses": True,
        "web_deep_read_top_n": 0,
        "web_backoff_base_s": 0.01,
        **overrides,
    }
    return create_web_search(Settings(_env_file=None, **values))


def test_legs_route_each_query_and_say_why(fake_web):
    web = engine_web(fake_web, "bocha", "serper", "baike")
    assert [leg.provider.name for leg in web.legs("大熊猫吃什么？", caller=CALLER)] == ["bocha"]
    assert [leg.provider.name for leg in web.legs("What is the Rosetta Stone?", caller=CALLER)] == ["serper"]
    legs = web.legs("张欣", caller=CALLER)
    assert [leg.provider.name for leg in legs] == ["baike", "bocha"]
    assert "entity" in (legs[0].diagnostics.route or "")
    assert legs[0].diagnostics.query == "张欣"


def test_explicit_engines_mean_exactly_those_that_are_configured(fake_web):
    web = engine_web(fake_web, "bocha", "serper", "baike")
    assert [leg.provider.name for leg in web.legs("张欣", caller=CALLER, engines=("baike",))] == ["baike"]
    both = web.legs("Rosetta Stone", caller=CALLER, engines=("serper", "bocha"))
    assert [leg.provider.name for leg in both] == ["serper", "bocha"]
    assert web.legs("张欣", caller=CALLER, engines=("ncbi",)) == []  # not configured: no leg
    assert web.legs("张欣", caller=CALLER, engines=()) == []


def test_several_providers_are_merged_and_their_duplicates_dropped(fake_web):
    web = engine_web(fake_web, "bocha", "serper")

    async def go():
        legs = web.legs("Rosetta Stone hieroglyphs", caller=CALLER, engines=("serper", "bocha"))
        await asyncio.gather(*(leg.run() for leg in legs))
        await web.aclose()
        return legs

    legs = asyncio.run(go())
    assert [leg.diagnostics.status for leg in legs] == ["ok", "ok"]
    merged = merge_results(legs)
    assert {r.provider for r in merged} == {"serper", "bocha"}
    kept = cross_source_dedup([], merged)
    assert kept.counts.by_url >= 1  # the same page from both engines is kept once
    assert len({r.canonical_url for r in kept.kept}) == len(kept.kept)


def test_results_per_query_go_up_to_25_and_no_further():
    assert Settings(_env_file=None, web_max_results=25).web_max_results == 25
    with pytest.raises(ValidationError, match="web_max_results"):
        Settings(_env_file=None, web_max_results=26)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"WEB_SEARCH_PROVIDERS": "bocha,serper", "BOCHA_API_KEY": "k"}, "SERPER_API_KEY"),
        ({"WEB_SEARCH_PROVIDERS": "baike", "BAIKE_API_KEY": "k", "BAIKE_LIST_URL": ""}, "BAIKE_LIST_URL"),
        ({"WEB_SEARCH_PROVIDERS": "bocha,bing", "BOCHA_API_KEY": "k"}, "unknown provider"),
        ({"WEB_SEARCH_PROVIDERS": "none,bocha"}, "cannot mix none"),
        (
            {"WEB_SEARCH_PROVIDER": "serper", "WEB_SEARCH_PROVIDERS": "bocha", "BOCHA_API_KEY": "k"},
            "disagree",
        ),
        ({"WEB_SEARCH_PROVIDER": "bocha"}, "BOCHA_API_KEY"),
        ({"WEB_SEARCH_PROVIDERS": "ncbi", "NCBI_BASE_URL": "eutils.ncbi.nlm.nih.gov"}, "NCBI_BASE_URL"),
    ],
)
def test_a_provider_without_what_it_needs_is_a_start_up_error_naming_it(monkeypatch, env, named):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError, match=named):
        Settings(_env_file=None)


def test_the_one_provider_and_the_list_agree(monkeypatch):
    monkeypatch.setenv("BOCHA_API_KEY", "k")
    monkeypatch.setenv("SERPER_API_KEY", "k")
    listed = Settings(_env_file=None, web_search_providers="bocha,serper")
    assert listed.resolved_web_search_providers == ("bocha", "serper")
    assert listed.resolved_web_search_provider == "bocha"
    same = Settings(_env_file=None, web_search_provider="bocha", web_search_providers="bocha,serper")
    assert same.resolved_web_search_providers == ("bocha", "serper")
    one = Settings(_env_file=None, web_search_provider="serper")
    assert one.resolved_web_search_providers == ("serper",)
    # Academic engines need no key.
    assert Settings(
        _env_file=None, web_search_providers="ncbi,semantic_scholar"
    ).resolved_web_search_providers


@pytest.mark.parametrize(
    ("question", "name"),
    [("介绍一下张欣", "张欣"), ("张欣是谁？", "张欣"), ("谁是张欣", "张欣"), ("什么是都江堰？", "都江堰")],
)
def test_a_question_about_one_entity_asks_baike_for_the_name(fake_web, question, name):
    web = engine_web(fake_web, "bocha", "baike")
    legs = web.legs(question, caller=CALLER)
    assert [leg.provider.name for leg in legs] == ["baike", "bocha"]
    assert legs[0].query == name  # the name alone
    assert legs[1].query == question  # the web engine gets the natural-language question
    assert "entity" in (legs[0].diagnostics.route or "")


def test_a_question_that_only_mentions_an_entity_is_not_sent_to_baike():
    assert classify("张欣在贞观之治里为谁配音？")[0] == "zh"
    assert classify("都江堰是谁修建的？")[0] == "zh"
