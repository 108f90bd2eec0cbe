"""Deep research beyond the documents, with the real local model and the fake web provider: a section
the documents cannot answer is researched on the web (web=auto), cited by URL and stored; a section they
answer costs no provider call; web=false never calls one."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.embeddings import LocalEmbedder
from backend.llm import ExtractiveLLM
from tests.test_chat_web import DOCS, INSIDE, OUTSIDE, fake_web_hit

pytestmark = pytest.mark.slow
COMPOUND = f"{INSIDE}另外，{OUTSIDE}"


@pytest.fixture(scope="module")
def local_model():
    from backend.config import Settings

    return LocalEmbedder(Settings(_env_file=None))


@pytest.fixture
def client(make_services, fake_web, local_model):
    yield from _client(make_services, fake_web, local_model)


def _client(make_services, fake_web, local_model, **overrides):
    services = make_services(
        embedder=local_model,
        llm=ExtractiveLLM(),
        score_policies_dir=None,  # the shipped v3: the real model, real routing
        web_search_provider="tavily",
        tavily_api_key=fake_web.api_key,
        tavily_base_url=fake_web.base_url,
        web_allow_private_addresses=True,
        web_backoff_base_s=0.01,
        web_deep_read_top_n=0,
        **overrides,
    )
    with TestClient(create_app(services=services)) as test_client:
        assert test_client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        yield test_client


def research(client: TestClient, **body) -> dict:
    response = client.post("/research", json={"question": COMPOUND, **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_section_the_documents_cannot_answer_is_researched_on_the_web(client, fake_web):
    body = research(client)
    inside, outside = body["diagnostics"]["sections"]
    assert {s["route"] for s in inside["searches"]} == {"answer"}
    assert all(s["web_results"] == 0 for s in inside["searches"])
    assert any(s["web_results"] > 0 for s in outside["searches"])
    assert body["diagnostics"]["web"]["passages"] > 0
    first, second = body["sections"]
    by_n = {s["n"]: s for s in body["sources"]}
    assert {by_n[n]["kind"] for n in first["source_numbers"]} == {"local"}
    web = [by_n[n] for n in second["source_numbers"] if by_n[n]["kind"] == "web"]
    assert web
    assert web[0]["url"].startswith(fake_web.base_url)
    assert web[0]["pool_source"] == "web"
    assert web[0]["chunk_id"] is None
    assert "公斤" in second["content"]
    assert "- [" in body["report"]
    assert fake_web.base_url in body["report"]  # the bibliography names the page
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert stored["content"] == body["report"]
    assert [s["url"] for s in stored["sources"]] == [s.get("url") for s in body["sources"]]


def test_web_false_never_calls_a_provider(client, fake_web):
    body = research(client, web=False)
    assert fake_web.count("/search") == 0
    assert all(s["kind"] == "local" for s in body["sources"])
    assert body["diagnostics"]["web"] == {"requested": False, "enabled": True, "passages": 0}


def test_a_section_whose_local_search_runs_past_its_limit_is_researched_on_the_web(
    make_services, fake_web, local_model, stuck_search
):
    """As in /chat: past WEB_LOCAL_TIMEOUT_S a section's search stands on the web's hits (the documents
    not read), not a failed search that leaves the section empty."""
    fake_web.register(INSIDE, [fake_web_hit("pgrag 的检索分为三个阶段：预取、启发式重排和动态截断。")])
    made = _client(make_services, fake_web, local_model, web_local_timeout_s=0.3)
    client = next(made)
    try:
        stuck_search(client)
        response = client.post("/research", json={"question": INSIDE, "web": True})
        assert response.status_code == 200, response.text
        body = response.json()
        searches = [s for section in body["diagnostics"]["sections"] for s in section["searches"]]
        [first] = [s for s in searches if s["query"] == INSIDE]  # the fake web knows this wording only
        assert first.get("error") is None, first["error"]
        assert (first["route"], first["results"]) == ("web_fallback", 0)
        assert first["web_results"] > 0
        assert body["sources"]
        assert all(s["kind"] == "web" for s in body["sources"])
        assert "预取" in body["report"]
    finally:
        next(made, None)
