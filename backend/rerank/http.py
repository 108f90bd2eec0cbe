"""A cross-encoder behind an HTTP rerank API: Jina's POST /v1/rerank or Cohere's POST /v2/rerank.

Both take {model, query, documents, top_n} and answer {results: [{index, relevance_score}]}, the shape
that self-hosted servers (vLLM, Infinity, ...) also serve for open models such as BAAI/bge-reranker, so
RERANK_BASE_URL points this client at any of them; no weights are ever downloaded here. One attempt per
search, bounded by RERANK_TIMEOUT_S: a reranker is an optional improvement, so a slow or failing one
costs its timeout once and the heuristic order stands (retrying would double the wait of every search
while the provider is down).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from backend.config import Settings
from backend.rerank.base import Ranked, RerankDocument, RerankError


@dataclass(frozen=True)
class Dialect:
    path: str
    base_url: str
    model: str
    extra: tuple[tuple[str, Any], ...] = ()


DIALECTS: dict[str, Dialect] = {
    # return_documents=false: the texts are ours already, and echoing them back doubles the payload.
    "jina": Dialect(
        "/v1/rerank",
        "https://api.jina.ai",
        "jina-reranker-v2-base-multilingual",
        (("return_documents", False),),
    ),
    "cohere": Dialect("/v2/rerank", "https://api.cohere.com", "rerank-v3.5"),
}


class HttpReranker:
    """Scores the policy's best top_n candidates with a rerank model over HTTP."""

    scale: Literal["policy", "model"] = "model"

    def __init__(
        self, settings: Settings, provider: Literal["jina", "cohere"], *, client: httpx.Client | None = None
    ) -> None:
        dialect = DIALECTS[provider]
        self.name: str = provider
        self.model: str | None = settings.rerank_model.strip() or dialect.model
        self._dialect = dialect
        self._url = (settings.rerank_base_url.strip() or dialect.base_url).rstrip("/") + dialect.path
        self._max_chars = settings.rerank_max_doc_chars
        headers = {"Content-Type": "application/json"}
        if settings.rerank_key:
            headers["Authorization"] = f"Bearer {settings.rerank_key}"
        self._client = client or httpx.Client(timeout=settings.rerank_timeout_s, headers=headers)

    def rerank(self, query: str, documents: Sequence[RerankDocument], *, top_n: int) -> list[Ranked]:
        """The top_n policy-best documents in the model's order with its relevance scores."""
        if not documents:
            return []
        order = sorted(range(len(documents)), key=lambda i: -documents[i].policy_score)[:top_n]
        body = {
            "model": self.model,
            "query": query,
            "documents": [documents[i].text[: self._max_chars] for i in order],
            "top_n": len(order),
            **dict(self._dialect.extra),
        }
        results = self._post(body)
        ranked = _parse(results, len(order))
        return [Ranked(order[r.index], r.score) for r in sorted(ranked, key=lambda r: -r.score)]

    def close(self) -> None:
        self._client.close()

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            response = self._client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise RerankError(f"{self.name} rerank timed out ({exc!r})", reason="timeout") from exc
        except httpx.TransportError as exc:
            raise RerankError(f"{self.name} rerank unreachable: {exc}", reason="connection") from exc
        if response.status_code != 200:
            raise RerankError(
                f"{self.name} rerank answered HTTP {response.status_code}: {response.text[:200]}",
                reason="http_error",
            )
        try:
            return response.json()
        except ValueError as exc:
            raise RerankError(f"{self.name} rerank answered non-JSON", reason="bad_response") from exc


def _parse(payload: Any, sent: int) -> list[Ranked]:
    """results[] as Ranked, refusing anything that would mis-order silently (bad index, NaN, repeats)."""
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise RerankError("rerank response has no results list", reason="bad_response")
    ranked: list[Ranked] = []
    seen: set[int] = set()
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        valid_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < sent
        valid_score = isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        if not (valid_index and valid_score) or index in seen:
            raise RerankError(f"rerank response has an invalid result {item!r:.120}", reason="bad_response")
        assert isinstance(index, int)
        assert isinstance(score, int | float)
        seen.add(index)
        ranked.append(Ranked(index, float(score)))
    if not ranked:
        raise RerankError("rerank response scored no document", reason="bad_response")
    return ranked
