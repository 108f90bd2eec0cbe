"""EMBEDDING_PROVIDER=openai_compatible against the local fake OpenAI-compatible server: vectors in input
order, batches, prefixes, the size found or checked, retries (429, 5xx, timeouts), malformed replies
(a clear 502, never a 500), and the factory."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from backend.config import Settings
from backend.embeddings import OpenAICompatibleEmbedder, create_embedder
from backend.errors import InvalidInput, ProviderError
from backend.testing import HashingEmbedder
from backend.testing.fake_openai import FakeOpenAI, Raw

TEXTS = ["尤金袋鼠分布在澳洲南部岛屿。", "考拉以桉树叶为食。", "大熊猫吃竹子。"]


def settings(fake: FakeOpenAI, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "embedding_provider": "openai_compatible",
        "openai_base_url": fake.url,
        "openai_api_key": fake.api_key,
        "openai_embedding_model": fake.embedding_model,
        "openai_embedding_max_retries": 2,
        "openai_embedding_timeout_s": 60,  # a loaded CI machine must not turn a batch into a retry
        **overrides,
    }
    return Settings(_env_file=None, **values)


def embedder(fake: FakeOpenAI, **overrides: Any) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(settings(fake, **overrides), backoff_s=0.001, max_backoff_s=0.01)


def test_documents_come_back_unit_length_in_input_order_across_batches(fake_openai: FakeOpenAI) -> None:
    model = embedder(fake_openai, openai_embedding_dims=64, openai_embedding_batch_size=2)
    vectors = model.embed_documents(TEXTS)
    assert vectors.shape == (3, 64)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(vectors, HashingEmbedder(64).embed_documents(TEXTS), atol=1e-5)
    sent = [r.body["input"] for r in fake_openai.embedding_requests]
    assert sorted(sent, key=len, reverse=True) == [TEXTS[:2], TEXTS[2:]]  # two batches, sent concurrently
    request = fake_openai.embedding_requests[0]
    assert request.path == "/v1/embeddings"
    assert request.headers["Authorization"] == "Bearer test-key"
    assert request.body["model"] == "fake-embed"
    assert "dimensions" not in request.body


def test_the_size_is_found_with_one_request_and_named_in_the_model_id(fake_openai: FakeOpenAI) -> None:
    model = embedder(fake_openai)
    assert model.model_id == "fake-embed@64"
    assert model.dims == 64
    assert len(fake_openai.embedding_requests) == 1  # asked once, remembered
    assert model.embed_query("考拉").shape == (64,)


def test_query_and_document_prefixes_are_sent_the_ids_stay_the_same(fake_openai: FakeOpenAI) -> None:
    model = embedder(
        fake_openai,
        openai_embedding_dims=64,
        openai_embedding_query_prefix="query: ",
        openai_embedding_document_prefix="passage: ",
    )
    model.embed_query("考拉吃什么")
    model.embed_documents(["考拉以桉树叶为食。"])
    assert [r.body["input"] for r in fake_openai.embedding_requests] == [
        ["query: 考拉吃什么"],
        ["passage: 考拉以桉树叶为食。"],
    ]


def test_send_dims_asks_for_the_size(fake_openai: FakeOpenAI) -> None:
    model = embedder(fake_openai, openai_embedding_dims=64, openai_embedding_send_dims=True)
    model.embed_query("考拉")
    assert fake_openai.embedding_requests[0].body["dimensions"] == 64


def test_a_server_of_another_size_is_a_502_naming_the_setting(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(
        ProviderError, match=r"vectors of 64 dimensions, expected 1024.*OPENAI_EMBEDDING_DIMS"
    ):
        embedder(fake_openai, openai_embedding_dims=1024).embed_query("考拉")


def test_a_separate_embedding_server_and_key(fake_openai: FakeOpenAI) -> None:
    with FakeOpenAI(api_key="embed-key") as other:
        model = embedder(
            fake_openai,
            openai_embedding_base_url=other.url,
            openai_embedding_api_key="embed-key",
            openai_embedding_dims=64,
        )
        model.embed_query("考拉")
        assert other.embedding_requests[0].headers["Authorization"] == "Bearer embed-key"
    assert fake_openai.embedding_requests == []


def test_429_and_5xx_are_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_embeddings(429, "Rate limit reached", times=1)
    fake_openai.fail_embeddings(503, "overloaded", times=1)
    vector = embedder(fake_openai, openai_embedding_dims=64).embed_query("考拉")
    assert vector.shape == (64,)
    assert len(fake_openai.embedding_requests) == 3


def test_retries_exhausted_is_a_502_that_says_so(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_embeddings(503, "overloaded", times=3)
    with pytest.raises(ProviderError, match=r"failed after 3 attempt\(s\): HTTP 503 overloaded"):
        embedder(fake_openai, openai_embedding_dims=64).embed_query("考拉")


def test_a_wrong_key_is_not_retried(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ProviderError, match="HTTP 401 Incorrect API key provided.*check the API key"):
        embedder(fake_openai, openai_api_key="wrong", openai_embedding_dims=64).embed_query("考拉")


def test_a_client_error_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_embeddings(400, "input is too long", times=3)
    with pytest.raises(ProviderError, match="rejected the request: HTTP 400 input is too long"):
        embedder(fake_openai, openai_embedding_dims=64).embed_documents(["考拉" * 10])
    assert len(fake_openai.embedding_requests) == 1


def test_a_chat_model_named_as_the_embedding_model_says_what_to_check(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ProviderError, match="HTTP 404.*check the model name"):
        embedder(fake_openai, openai_embedding_model="fake-chat", openai_embedding_dims=64).embed_query("x")


def test_a_server_slower_than_the_timeout_names_the_setting(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_embeddings(500, "late", times=2, delay_s=1.0)
    model = embedder(
        fake_openai, openai_embedding_dims=64, openai_embedding_timeout_s=0.2, openai_embedding_max_retries=1
    )
    with pytest.raises(ProviderError, match=r"timed out after 0\.2 s \(OPENAI_EMBEDDING_TIMEOUT_S\)"):
        model.embed_query("考拉")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html>Bad Gateway</html>", "a body that is not JSON"),
        (json.dumps({"object": "list", "data": []}), "returned 0 usable embeddings for 1 texts"),
        (
            json.dumps({"data": [{"index": 0, "embedding": ["a", "b"]}]}),
            "returned 1 usable embeddings|returned 0 usable",
        ),
        (json.dumps({"data": [{"index": 0, "embedding": [0.0] * 64}]}), "zero or non-finite vector"),
    ],
)
def test_a_malformed_reply_is_a_clear_502(fake_openai: FakeOpenAI, body: str, message: str) -> None:
    fake_openai.embedding_failures.append(Raw(200, body.encode()))
    with pytest.raises(ProviderError, match=message):
        embedder(fake_openai, openai_embedding_dims=64).embed_query("考拉")


def test_base64_vectors_and_shuffled_indexes_are_read(fake_openai: FakeOpenAI) -> None:
    first, second = np.eye(4, dtype="<f4")[1], np.eye(4, dtype="<f4")[2]
    data = [
        {"index": 1, "embedding": base64.b64encode(second.tobytes()).decode()},
        {"index": 0, "embedding": first.tolist()},
    ]
    fake_openai.embedding_failures.append(Raw(200, json.dumps({"data": data}).encode()))
    vectors = embedder(fake_openai, openai_embedding_dims=4).embed_documents(["一", "二"])
    np.testing.assert_array_equal(vectors, np.stack([first, second]))


def test_empty_texts_are_refused_before_any_request(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(InvalidInput):
        embedder(fake_openai, openai_embedding_dims=64).embed_documents(["考拉", "  "])
    assert fake_openai.embedding_requests == []


def test_the_factory_builds_it_from_settings(fake_openai: FakeOpenAI) -> None:
    built = create_embedder(settings(fake_openai, openai_embedding_dims=64))
    assert isinstance(built, OpenAICompatibleEmbedder)
    assert built.model_id == "fake-embed@64"
    assert fake_openai.embedding_requests == []  # a configured size costs no request


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"openai_embedding_model": "bge-m3"}, "needs OPENAI_EMBEDDING_BASE_URL"),
        ({"openai_base_url": "http://h/v1"}, "needs OPENAI_EMBEDDING_MODEL"),
        (
            {
                "openai_base_url": "http://h/v1",
                "openai_embedding_model": "m",
                "openai_embedding_send_dims": True,
            },
            "OPENAI_EMBEDDING_SEND_DIMS=true needs OPENAI_EMBEDDING_DIMS",
        ),
    ],
)
def test_settings_name_what_the_embedder_is_missing(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings(_env_file=None, embedding_provider="openai_compatible", **values)
