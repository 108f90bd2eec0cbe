"""Web search settings: the provider chosen from the key, start-up errors that name the missing setting,
domain lists as users write them, and keys that never appear in an error."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backend.config import Settings


def test_the_provider_is_tavily_with_a_key_and_none_without():
    assert Settings(_env_file=None).resolved_web_search_provider == "none"
    assert Settings(_env_file=None, tavily_api_key="tvly-x").resolved_web_search_provider == "tavily"
    assert Settings(_env_file=None, tavily_api_key="  ").resolved_web_search_provider == "none"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"WEB_SEARCH_PROVIDER": "tavily"}, "TAVILY_API_KEY"),
        ({"WEB_SEARCH_PROVIDER": "searxng"}, "SEARXNG_URL"),
        ({"WEB_SEARCH_PROVIDER": "bing"}, "web_search_provider"),
        ({"TAVILY_API_KEY": "k", "TAVILY_BASE_URL": "api.tavily.com"}, "TAVILY_BASE_URL"),
        ({"WEB_SOFT_WAIT_MS": "-1"}, "web_soft_wait_ms"),
        ({"WEB_MAX_RESULTS": "50"}, "web_max_results"),
    ],
)
def test_bad_web_settings_fail_at_start_up_naming_the_setting(monkeypatch, env, named):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValidationError, match=named):
        Settings(_env_file=None)


def test_a_key_never_appears_in_a_settings_error(monkeypatch):
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-SECRET-42")
    monkeypatch.setenv("RAG_TOP_K_MIN", "9")
    with pytest.raises(ValidationError) as info:
        Settings(_env_file=None)
    assert "tvly-SECRET-42" not in str(info.value)
    assert "tvly-SECRET-42" not in repr(info.value)
    monkeypatch.delenv("RAG_TOP_K_MIN")
    assert "tvly-SECRET-42" not in repr(Settings(_env_file=None, tavily_api_key="tvly-SECRET-42"))


@pytest.mark.parametrize(
    ("value", "domains"),
    [
        ("example.com, *.Ads.Example ,.tracker.net", ["example.com", "ads.example", "tracker.net"]),
        ('["a.com", "B.org"]', ["a.com", "b.org"]),
        ("", []),
    ],
)
def test_domain_lists_accept_commas_or_json(monkeypatch, value, domains):
    monkeypatch.setenv("WEB_DENY_DOMAINS", value)
    assert Settings(_env_file=None).web_deny_domains == domains
