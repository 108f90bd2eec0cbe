"""Embedding providers: Gemini against a local fake of its REST API, the hashing fake, the local e5 model."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.config import Settings
from backend.embeddings import Embedder, GeminiEmbedder, LocalEmbedder, create_embedder
from backend.errors import InvalidInput, ProviderError
from backend.testing import FailingEmbedder, HashingEmbedder
from tests.fake_http import serve

_PATH = re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):batchEmbedContents$")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def raw_vector(text: str, dims: int) -> np.ndarray:
    """The fake API's answer for `text`: deterministic and deliberately not unit length."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).normal(size=dims) * 7.0 + 0.5


def expected(texts: list[str], dims: int) -> np.ndarray:
    rows = np.array([raw_vector(t, dims) for t in texts])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class FakeGemini:
    """Imitates POST /v1[beta]/models/{model}:batchEmbedContents; records requests, can be scripted."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.failures: list[int] = []  # statuses to answer, one per request, before succeeding
        self.delay_s = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def answer(self, path: str, api_key: str | None, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            status = self.failures.pop(0) if self.failures else 200
        try:
            payload = self._payload(status, path, api_key, body)  # recorded before the delay
            time.sleep(self.delay_s)
            return status, payload
        finally:
            with self._lock:
                self.in_flight -= 1

    def _payload(self, status: int, path: str, api_key: str | None, body: dict) -> dict:
        match = _PATH.match(path)
        assert match, path
        entries = body["requests"]
        for entry in entries:
            assert entry["model"] == f"models/{match['model']}"
        self.requests.append(
            {
                "model": match["model"],
                "api_key": api_key,
                "texts": [part["text"] for e in entries for part in e["content"]["parts"]],
                "parts_per_entry": [len(e["content"]["parts"]) for e in entries],
                "task_types": {e.get("taskType") for e in entries},
                "dims": {e.get("outputDimensionality") for e in entries},
            }
        )
        if status != 200:
            name = _STATUS_NAMES.get(status, "UNKNOWN")
            return {"error": {"code": status, "message": f"scripted {name}", "status": name}}
        return {
            "embeddings": [
                {
                    "values": raw_vector(
                        " ".join(p["text"] for p in e["content"]["parts"]), e["outputDimensionality"]
                    ).tolist()
                }
                for e in entries
            ]
        }


@pytest.fixture
def fake_gemini() -> Iterator[tuple[FakeGemini, str]]:
    fake = FakeGemini()

    def respond(path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, str]:
        status, payload = fake.answer(path, headers.get("x-goog-api-key"), body)
        return status, json.dumps(payload).encode(), "application/json"

    with serve(respond) as url:
        yield fake, url


def gemini(url: str, **overrides: object) -> GeminiEmbedder:
    """A GeminiEmbedder pointed at the fake, with tiny backoff sleeps."""
    fields: dict[str, Any] = {
        "GEMINI_API_KEY": "test-key",
        "gemini_base_url": url,
        "gemini_embedding_dims": 16,
        **overrides,
    }
    return GeminiEmbedder(Settings(_env_file=None, **fields), backoff_base_s=0.001)


# --- Gemini ---------------------------------------------------------------------------------------


def test_gemini_documents_are_unit_vectors_in_input_order_across_batches(fake_gemini) -> None:
    fake, url = fake_gemini
    texts = [f"段落 {i}" for i in range(23)]
    result = gemini(url, gemini_embedding_batch_size=5, gemini_max_in_flight=3).embed_documents(texts)

    assert result.dtype == np.float32
    assert result.shape == (23, 16)
    np.testing.assert_allclose(result, expected(texts, 16), atol=1e-6)
    assert sorted(len(r["texts"]) for r in fake.requests) == [3, 5, 5, 5, 5]
    assert {t for r in fake.requests for t in r["task_types"]} == {"RETRIEVAL_DOCUMENT"}
    assert {d for r in fake.requests for d in r["dims"]} == {16}
    assert {r["api_key"] for r in fake.requests} == {"test-key"}


def test_gemini_query_uses_query_task_type(fake_gemini) -> None:
    fake, url = fake_gemini
    embedder = gemini(url, gemini_embedding_model="gemini-embedding-001", gemini_embedding_dims=768)

    vector = embedder.embed_query("护照怎么办理")

    assert embedder.model_id == "gemini-embedding-001@768"
    assert vector.shape == (768,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(vector, expected(["护照怎么办理"], 768)[0], atol=1e-6)
    assert fake.requests[0]["task_types"] == {"RETRIEVAL_QUERY"}
    assert fake.requests[0]["model"] == "gemini-embedding-001"


def test_gemini_batches_never_exceed_the_api_limit_of_100(fake_gemini) -> None:
    fake, url = fake_gemini
    texts = [f"t{i}" for i in range(230)]
    result = gemini(url, gemini_embedding_batch_size=250).embed_documents(texts)

    assert sorted(len(r["texts"]) for r in fake.requests) == [30, 100, 100]
    np.testing.assert_allclose(result, expected(texts, 16), atol=1e-6)


def test_gemini_sends_one_content_per_text_even_for_multimodal_models(fake_gemini) -> None:
    # The SDK merges bare strings into one multi-part content for gemini-embedding-2.
    fake, url = fake_gemini
    result = gemini(url, gemini_embedding_model="gemini-embedding-2").embed_documents(["a b", "c d", "e f"])

    assert result.shape == (3, 16)
    assert fake.requests[0]["parts_per_entry"] == [1, 1, 1]


def test_gemini_keeps_at_most_max_in_flight_requests(fake_gemini) -> None:
    fake, url = fake_gemini
    fake.delay_s = 0.1
    embedder = gemini(url, gemini_embedding_batch_size=2, gemini_max_in_flight=2)

    # Two callers at once share the instance's cap.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(
            pool.map(embedder.embed_documents, [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]])
        )

    assert fake.max_in_flight == 2
    assert len(fake.requests) == 8
    np.testing.assert_allclose(results[1], expected([f"b{i}" for i in range(8)], 16), atol=1e-6)


def test_gemini_retries_429_and_503_then_succeeds(fake_gemini) -> None:
    fake, url = fake_gemini
    fake.failures = [429, 503, 500]

    vector = gemini(url, gemini_max_retries=3).embed_query("hello")

    assert len(fake.requests) == 4
    np.testing.assert_allclose(vector, expected(["hello"], 16)[0], atol=1e-6)


def test_gemini_gives_up_after_max_retries_with_a_clear_error(fake_gemini) -> None:
    fake, url = fake_gemini
    fake.failures = [429] * 10

    with pytest.raises(ProviderError, match=r"after 3 attempt.*429.*GEMINI_MAX_IN_FLIGHT") as caught:
        gemini(url, gemini_max_retries=2).embed_documents(["a", "b"])

    assert len(fake.requests) == 3
    assert caught.value.status_code == 502


@pytest.mark.parametrize(
    ("status", "hint"),
    [(400, "GEMINI_EMBEDDING_MODEL"), (403, "GEMINI_API_KEY"), (404, "'gemini-embedding-001' was not found")],
)
def test_gemini_does_not_retry_other_client_errors(fake_gemini, status: int, hint: str) -> None:
    fake, url = fake_gemini
    fake.failures = [status]

    with pytest.raises(ProviderError, match=rf"HTTP {status} {_STATUS_NAMES[status]}.*Not retried.*{hint}"):
        gemini(url, gemini_max_retries=5).embed_query("hello")

    assert len(fake.requests) == 1


def test_gemini_times_out_each_request_and_retries(fake_gemini) -> None:
    fake, url = fake_gemini
    fake.delay_s = 0.5

    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"after 2 attempt.*GEMINI_TIMEOUT_S"):
        gemini(url, gemini_timeout_s=0.1, gemini_max_retries=1).embed_query("slow")

    assert time.monotonic() - started < 0.9
    assert len(fake.requests) == 2


def test_gemini_refuses_empty_texts_without_calling_the_api(fake_gemini) -> None:
    fake, url = fake_gemini
    embedder = gemini(url)

    with pytest.raises(InvalidInput, match="item 2 of 3"):
        embedder.embed_documents(["ok", "  \n", "fine"])
    with pytest.raises(InvalidInput):
        embedder.embed_query("")
    assert embedder.embed_documents([]).shape == (0, 16)
    assert fake.requests == []


# --- hashing fake and failing wrapper -------------------------------------------------------------


def test_hashing_embedder_ranks_shared_words_higher() -> None:
    embedder = HashingEmbedder()
    docs = embedder.embed_documents(["如何申请护照和签证", "今天天气晴朗适合散步", "Postgres vector search"])
    query = embedder.embed_query("护照申请需要什么材料")

    assert embedder.model_id == "hashing-test@384"
    assert docs.shape == (3, 384)
    assert docs.dtype == np.float32
    scores = docs @ query
    assert scores[0] > scores[1]
    assert scores[0] > scores[2]
    assert float(embedder.embed_query("vector search in postgres") @ docs[2]) > 0.5


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40).filter(str.strip))
def test_hashing_embedder_is_deterministic_and_unit_length(text: str) -> None:
    first = HashingEmbedder(dims=64).embed_query(text)
    again = HashingEmbedder(dims=64).embed_documents([text])[0]

    assert np.array_equal(first, again)
    assert np.linalg.norm(first) == pytest.approx(1.0, abs=1e-5)


def test_failing_embedder_fails_only_on_the_chosen_call() -> None:
    embedder = FailingEmbedder(HashingEmbedder(dims=32), fail_on_call=2)

    assert embedder.embed_documents(["a"]).shape == (1, 32)
    with pytest.raises(ProviderError):
        embedder.embed_documents(["b"])
    assert embedder.embed_documents(["c"]).shape == (1, 32)
    assert embedder.embed_query("d").shape == (32,)
    assert embedder.model_id == "hashing-test@32"


def test_every_embedder_satisfies_the_protocol(fake_gemini) -> None:
    _, url = fake_gemini
    local = LocalEmbedder(Settings(_env_file=None))
    for embedder in (gemini(url), local, HashingEmbedder(), FailingEmbedder(HashingEmbedder())):
        assert isinstance(embedder, Embedder)
    with pytest.raises(TypeError):
        HashingEmbedder().embed_documents("a bare string")
    with pytest.raises(InvalidInput):
        local.embed_documents(["   "])  # refused before the model would load


# --- factory --------------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "EMBEDDING_PROVIDER", "GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_create_embedder_uses_gemini_when_a_key_is_set(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GEMINI_API_KEY", "k")
    embedder = create_embedder(Settings(_env_file=None))

    assert isinstance(embedder, GeminiEmbedder)
    assert embedder.model_id == "gemini-embedding-001@768"


def test_create_embedder_falls_back_to_local_without_a_key(clean_env: pytest.MonkeyPatch) -> None:
    embedder = create_embedder(Settings(_env_file=None))

    assert isinstance(embedder, LocalEmbedder)
    assert embedder.model_id == "multilingual-e5-small@384"


def test_explicit_embedding_provider_wins(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GEMINI_API_KEY", "k")
    assert isinstance(create_embedder(Settings(_env_file=None, embedding_provider="local")), LocalEmbedder)

    clean_env.delenv("GEMINI_API_KEY")
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        create_embedder(Settings(_env_file=None, embedding_provider="gemini"))


# --- the real local model -------------------------------------------------------------------------


@pytest.mark.slow
def test_local_embedder_matches_chinese_query_to_its_passage() -> None:
    embedder = LocalEmbedder(Settings(_env_file=None, local_embedding_batch_size=2))
    passages = [
        "办理护照需要携带身份证原件和近期照片，到户籍所在地的出入境管理部门提交申请。",
        "今天天气晴朗，气温适宜，很多市民来到公园散步、放风筝。",
        "PostgreSQL 的 pgvector 扩展支持 HNSW 索引，可以加速向量近邻搜索。",
    ]
    docs = embedder.embed_documents(passages)  # two batches
    query = embedder.embed_query("怎么申请护照？")

    assert docs.shape == (3, 384)
    assert docs.dtype == np.float32
    assert query.shape == (384,)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    scores = docs @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] - max(scores[1], scores[2]) > 0.05
    # Batching does not change a passage's vector.
    np.testing.assert_allclose(embedder.embed_documents(passages[2:])[0], docs[2], atol=1e-4)


@pytest.mark.slow
def test_local_embedder_is_safe_to_call_from_threads() -> None:
    embedder = LocalEmbedder(Settings(_env_file=None))
    queries = ["护照", "天气预报", "向量检索", "签证材料"] * 2
    sequential = [embedder.embed_query(q) for q in queries]

    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(embedder.embed_query, queries))

    for one, other in zip(sequential, concurrent, strict=True):
        np.testing.assert_allclose(one, other, atol=1e-6)
