"""The fake web keeps the contracts the tests rely on (Tavily's auth and limits, keyword behaviours)."""

from __future__ import annotations

import subprocess
import sys

import httpx

from backend import PROJECT_ROOT
from backend.testing.fake_web_state import Behaviour, clean_query


def post(fake_web, body, key="fake-key"):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(fake_web.base_url + "/search", json=body, headers=headers, timeout=5)


def test_tavily_contract_auth_and_query_limits(fake_web):
    assert post(fake_web, {"query": "panda"}, key="wrong").status_code == 401
    assert post(fake_web, {"query": "panda"}, key=None).status_code == 401
    assert post(fake_web, {"query": "panda", "api_key": "fake-key"}, key=None).status_code == 200  # old style
    assert post(fake_web, {"query": "x" * 401}).status_code == 400
    assert post(fake_web, {}).status_code == 400
    assert fake_web.count() == 5


def test_keyword_behaviours_and_registered_results(fake_web):
    assert clean_query("Rosetta fake:429x2 fake:retry-after=3 stone") == "Rosetta stone"
    limited = post(fake_web, {"query": "rosetta fake:429 fake:retry-after=3"})
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "3")
    assert post(fake_web, {"query": "rosetta fake:empty"}).json()["results"] == []
    urls = [r["url"] for r in post(fake_web, {"query": "rosetta fake:dupes"}).json()["results"]]
    assert len(urls) == 2
    assert urls[1].startswith(urls[0])
    assert "utm_source" in urls[1]

    fake_web.register(
        "What is X?", [{"url": "https://x.example/", "title": "X", "content": "X is.", "score": 1}]
    )
    assert post(fake_web, {"query": "what is x?"}).json()["results"][0]["url"] == "https://x.example/"

    fake_web.behaviour = Behaviour(status=503)
    assert post(fake_web, {"query": "rosetta"}).status_code == 503


def test_the_demo_command_documents_itself():
    result = subprocess.run(
        [sys.executable, "-m", "backend.testing.fake_web", "--help"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert "--port" in result.stdout
    assert "fake:hang" in result.stdout
