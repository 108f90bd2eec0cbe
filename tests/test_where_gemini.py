"""The WhereBuilder's Gemini path against the local fake Gemini: structured output used when it checks,
the rules on malformed output, an invalid value, an error or a timeout; and the metadata vocabulary the
builder matches against (per caller, row-level security, cached)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.auth import LOCAL_IDENTITY
from backend.auth.identity import Identity
from backend.config import Settings
from backend.llm.gemini import GeminiLLM
from backend.where.builder import WhereBuilder
from backend.where.model import WHERE_SCHEMA
from backend.where.rules import Vocabulary
from backend.where.vocabulary import MetadataVocabulary
from tests.factories import loaded_document

NOW = datetime(2025, 6, 18, 9, 0, tzinfo=UTC)
VOCABULARY = Vocabulary({"tags": ["发票", "差旅"], "lang": ["zh", "en"]})
QUESTION = "上个月关于差旅的英文资料"
GOOD = {
    "date_field": "created_at",
    "date_from": "2025-05-01",
    "date_to": "2025-06-01T00:00:00+00:00",
    "lang": "en",
    "content_type": "",
    "media_type": "",
    "tags": ["差旅"],
    "min_quality": -1,
    "phrases": ["上个月", "英文"],
}


def gemini_settings(url: str, **overrides) -> Settings:
    values = {"gemini_api_key": "test-key", "gemini_base_url": url, "llm_max_retries": 0, **overrides}
    return Settings(_env_file=None, embedding_provider="local", llm_provider="gemini", **values)


def gemini_builder(fake, timeout_s: float = 2.0) -> WhereBuilder:
    settings = gemini_settings(fake.url, where_llm_timeout_s=timeout_s, llm_timeout_s=timeout_s)
    return WhereBuilder(
        settings, lambda identity: VOCABULARY, lambda f: f, llm=GeminiLLM(settings), clock=lambda: NOW
    )


def plan(builder: WhereBuilder, question: str = QUESTION):
    return builder.plan(question, None, infer=True, identity=LOCAL_IDENTITY)


def test_good_structured_output_is_used_with_the_schema_and_the_vocabulary_in_the_prompt(fake_gemini):
    fake_gemini.reply_text(json.dumps(GOOD, ensure_ascii=False))
    result = plan(gemini_builder(fake_gemini))
    assert result.method == "gemini"
    assert result.fallback is None
    assert result.inferred == {
        "created_at": {"$gte": "2025-05-01T00:00:00+00:00", "$lt": "2025-06-01T00:00:00+00:00"},
        "lang": {"$eq": "en"},
        "tags": {"$contains": "差旅"},
    }
    assert result.query == "关于差旅的 资料"
    (path, body, _headers) = fake_gemini.requests[0]
    assert ":generateContent" in path
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == WHERE_SCHEMA
    prompt = body["contents"][0]["parts"][0]["text"]
    assert "2025-06-18" in prompt
    assert "差旅" in prompt
    assert QUESTION in prompt


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I think the user wants English documents.", "malformed output"),
        (json.dumps({**GOOD, "lang": "fr"}), "lang 'fr' is not a value of the documents"),
        (json.dumps({**GOOD, "date_from": "last May"}), "is not an ISO 8601 date"),
        (json.dumps({**GOOD, "date_from": "2025-06-01", "date_to": "2025-05-01"}), "is not before"),
        (json.dumps({**GOOD, "min_quality": 7}), "above 1"),
    ],
)
def test_output_that_does_not_check_falls_back_to_the_rules(fake_gemini, reply, reason):
    fake_gemini.reply_text(reply)
    result = plan(gemini_builder(fake_gemini))
    assert result.method == "rules"
    assert reason in result.fallback
    assert result.inferred["lang"] == {"$eq": "en"}  # what the rules read
    assert result.inferred["created_at"] == {
        "$gte": "2025-05-01T00:00:00+00:00",
        "$lt": "2025-06-01T00:00:00+00:00",
    }


def test_a_provider_error_falls_back_to_the_rules(fake_gemini):
    fake_gemini.reply_error(400, "INVALID_ARGUMENT", "schema not supported")
    result = plan(gemini_builder(fake_gemini))
    assert result.method == "rules"
    assert "schema not supported" in result.fallback
    assert "lang" in result.inferred


def test_a_slow_model_is_cut_at_the_timeout_and_the_rules_decide(fake_gemini):
    fake_gemini.reply_slowly(4.0, json.dumps(GOOD))
    builder = gemini_builder(fake_gemini, timeout_s=0.3)  # the SDK's client is built outside the clock
    started = time.perf_counter()
    result = plan(builder)
    # Well before the reply: cut at the timeout (a wide margin, so a loaded machine does not fail it).
    assert time.perf_counter() - started < 2.5
    assert result.method == "rules"
    assert result.fallback.startswith("timeout")
    assert result.inferred["lang"] == {"$eq": "en"}


def test_search_uses_gemini_when_the_llm_provider_is_gemini(fake_gemini, make_services):
    services = make_services(
        llm_provider="gemini", gemini_api_key="test-key", gemini_base_url=fake_gemini.url, llm_max_retries=0
    )
    services.retrieval.where.clock = lambda: NOW
    english = {"external_id": "trip", "title": "Travel", "content": "Book trains seven days ahead."}
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": [english]})
        fake_gemini.reply_text(json.dumps({**GOOD, "date_from": "", "date_to": "", "tags": []}))
        body = client.post("/search", json={"query": "关于火车的英文资料", "infer_filters": True}).json()
    assert body["diagnostics"]["where"]["method"] == "gemini"
    assert body["applied_where"] == {"lang": {"$eq": "en"}}
    assert [r["external_id"] for r in body["results"]] == ["trip"]


def test_where_builder_rules_never_calls_the_model(fake_gemini, make_services):
    services = make_services(
        llm_provider="gemini",
        gemini_api_key="test-key",
        gemini_base_url=fake_gemini.url,
        where_builder="rules",
    )
    result = services.retrieval.where.plan(QUESTION, None, infer=True, identity=LOCAL_IDENTITY)
    assert result.method == "rules"
    assert fake_gemini.requests == []


# --- the vocabulary ------------------------------------------------------------------------------------


def user(n: int) -> Identity:
    return Identity(user_id=uuid.UUID(int=n), role="authenticated")


def test_vocabulary_is_what_the_caller_may_read_and_is_cached(services):
    ingest = services.ingestion.ingest
    ingest([loaded_document("a", "甲的文档内容足够长。", tags=["甲的标签"], lang="zh")], identity=user(1))
    ingest([loaded_document("b", "乙的文档内容足够长。", tags=["乙的标签"])], identity=user(2))
    clock = [0.0]
    vocabulary = MetadataVocabulary(services.db, ttl_s=60, max_values=100, clock=lambda: clock[0])
    mine = vocabulary.get(user(1))
    assert mine.of("tags") == {"甲的标签"}  # never another user's private tag
    assert mine.has("lang", "zh")
    assert mine.has("content_type", "text/markdown")
    ingest([loaded_document("c", "甲的第二篇文档。", tags=["新标签"])], identity=user(1))
    assert "新标签" not in vocabulary.get(user(1)).of("tags")  # cached
    clock[0] = 61.0
    assert "新标签" in vocabulary.get(user(1)).of("tags")  # re-read after the TTL


def test_an_unexpected_failure_of_the_model_path_still_leaves_the_rules(settings):
    from backend.testing import ScriptedLLM

    broken = ScriptedLLM(json_completions=[RuntimeError("connection pool exploded")])
    builder = WhereBuilder(settings, lambda identity: VOCABULARY, lambda f: f, llm=broken, clock=lambda: NOW)
    result = plan(builder)
    assert result.method == "rules"
    assert "RuntimeError: connection pool exploded" in result.fallback
    assert result.inferred["lang"] == {"$eq": "en"}
