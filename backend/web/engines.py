"""The research agent's web engines (seed multi-agent-research.md; issue 30): Bocha (Chinese web,
natural-language queries), Serper (Google, English keywords) and Baidu Baike (one entity's full entry).

Each speaks its vendor's HTTP contract through the shared client, retry policy and concurrency cap of
backend/web/providers.py; the tests point the base URLs at local fakes (backend/testing/fake_engines.py).
"""

from __future__ import annotations

from typing import Any

import httpx

from backend.errors import WebSearchError
from backend.web.providers import HttpProvider, web_results
from backend.web.retry import RetryPolicy
from backend.web.types import ProviderResponse, SearchOptions

BOCHA_MAX_COUNT = 50  # Bocha's web-search refuses more
BAIKE_LIST_TOP_K = 5  # senses of one name asked for; the main one is read first


class BochaProvider(HttpProvider):
    """POST {BOCHA_BASE_URL}/v1/web-search with `Authorization: Bearer <key>`, body {query, summary, count,
    freshness}; answers {code, msg, data: {webPages: {value: [{name, url, snippet, summary,
    datePublished, siteName}]}}}. `summary` (Bocha's AI summary of each page) is off by default: the
    seed found it drops the tables and lists an answer often sits in (BOCHA_SUMMARY)."""

    name = "bocha"
    _HINTS = {
        400: "the query or options were refused (BOCHA_FRESHNESS)",
        401: "check BOCHA_API_KEY",
        403: "check BOCHA_API_KEY and the account's balance",
    }

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str,
        base_url: str,
        policy: RetryPolicy,
        max_concurrency: int = 4,
        summary: bool = False,
        freshness: str = "noLimit",
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._url = base_url.rstrip("/") + "/v1/web-search"
        self._summary = summary
        self._freshness = freshness

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        body: dict[str, Any] = {
            "query": query,
            "summary": self._summary,
            "count": min(options.max_results, BOCHA_MAX_COUNT),
            "freshness": self._freshness,
        }
        if options.include_domains:
            body["include"] = "|".join(options.include_domains)
        if options.exclude_domains:
            body["exclude"] = "|".join(options.exclude_domains)
        headers = {"Authorization": f"Bearer {self._key}"}
        data, attempts = await self._json(
            lambda: self._client.build_request("POST", self._url, json=body, headers=headers),
            secrets=(self._key,),
        )
        payload = data.get("data") if isinstance(data, dict) else None
        if not isinstance(payload, dict):
            raise self._bad(f"without a data object (code {_code(data)})", attempts)
        pages = payload.get("webPages") or {}
        items = pages.get("value") if isinstance(pages, dict) else None
        if items is None:
            items = []  # no webPages: nothing found
        if not isinstance(items, list):
            raise self._bad("a webPages.value that is not a list", attempts)
        hits = [
            {
                "url": item.get("url"),
                "title": item.get("name"),
                "content": (self._summary and item.get("summary")) or item.get("snippet") or "",
                "published_date": item.get("datePublished"),
            }
            for item in items
            if isinstance(item, dict)
        ]
        return ProviderResponse(web_results(hits, self.name)[: options.max_results], attempts=attempts)


class SerperProvider(HttpProvider):
    """POST {SERPER_BASE_URL}/search with `X-API-KEY: <key>`, body {q, num, gl, hl}; answers {organic:
    [{title, link, snippet, date, position}], answerBox?, knowledgeGraph?}. The answer box and the
    knowledge graph, when they link a page, come first: Google's own answer to the query."""

    name = "serper"
    _HINTS = {
        400: "the query or options were refused (SERPER_GL, SERPER_HL)",
        401: "check SERPER_API_KEY",
        403: "check SERPER_API_KEY and the account's credits",
    }

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str,
        base_url: str,
        policy: RetryPolicy,
        max_concurrency: int = 4,
        gl: str = "",
        hl: str = "",
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._url = base_url.rstrip("/") + "/search"
        self._locale = {k: v for k, v in (("gl", gl), ("hl", hl)) if v}

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        body: dict[str, Any] = {"q": query, "num": options.max_results, **self._locale}
        headers = {"X-API-KEY": self._key}
        data, attempts = await self._json(
            lambda: self._client.build_request("POST", self._url, json=body, headers=headers),
            secrets=(self._key,),
        )
        if not isinstance(data, dict):
            raise self._bad("with something that is not a JSON object", attempts)
        organic = data.get("organic", [])
        if not isinstance(organic, list):
            raise self._bad("an organic list that is not a list", attempts)
        hits = [*_boxes(data), *(_organic(item) for item in organic if isinstance(item, dict))]
        return ProviderResponse(web_results(hits, self.name)[: options.max_results], attempts=attempts)


def _organic(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "url": item.get("link"),
        "title": item.get("title"),
        "content": item.get("snippet") or "",
        "published_date": item.get("date"),
    }


def _boxes(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer box and the knowledge graph as hits, when they name a page."""
    hits = []
    box = data.get("answerBox")
    if isinstance(box, dict) and box.get("link"):
        text = " ".join(str(box[k]) for k in ("answer", "snippet") if box.get(k))
        hits.append({"url": box["link"], "title": box.get("title"), "content": text})
    graph = data.get("knowledgeGraph")
    link = isinstance(graph, dict) and (graph.get("descriptionLink") or graph.get("website"))
    if isinstance(graph, dict) and link:
        attributes = graph.get("attributes") if isinstance(graph.get("attributes"), dict) else {}
        facts = "；".join(f"{k}: {v}" for k, v in (attributes or {}).items())
        text = " ".join(x for x in (str(graph.get("description") or ""), facts) if x)
        hits.append({"url": link, "title": graph.get("title"), "content": text})
    return hits


class BaikeProvider(HttpProvider):
    """Baidu Baike in two steps, as the seed's baike_search: the entry list of a name, then the full
    entry of its main sense. The contract is Qianfan AppBuilder's Baike API
    (https://cloud.baidu.com/doc/qianfan-api/s/0mocjdxi9 and .../Cmocj7w03):

        GET {BAIKE_LIST_URL}?lemma_title=<name>&top_k=5      Authorization: Bearer <key>
          -> {request_id, code, message, result: [{lemma_id, lemma_title, lemma_desc, is_default, url}]}
        GET {BAIKE_CONTENT_URL}?search_type=lemmaId&search_key=<lemma_id>
          -> {request_id, code, message, result: {lemma_id, lemma_title, lemma_desc, url, summary,
              abstract_plain, content_plain, ...}}

    `code` 0 is success. Only a pure entity name makes sense here (routing.py decides); the full entry
    is the hit's raw_content, so it is never deep-read again."""

    name = "baike"
    _HINTS = {401: "check BAIKE_API_KEY", 403: "check BAIKE_API_KEY and the component's quota"}

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str,
        list_url: str,
        content_url: str,
        policy: RetryPolicy,
        max_concurrency: int = 4,
        max_entries: int = 1,
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._list_url, self._content_url = list_url, content_url
        self._max_entries = max_entries

    async def _get(self, url: str, params: dict[str, Any]) -> tuple[Any, int]:
        headers = {"Authorization": f"Bearer {self._key}"}
        data, attempts = await self._json(
            lambda: self._client.build_request("GET", url, params=params, headers=headers),
            secrets=(self._key,),
        )
        if not isinstance(data, dict):
            raise self._bad("with something that is not a JSON object", attempts)
        if str(data.get("code", "0")) != "0":
            raise WebSearchError(
                f"baike refused the request (code {_code(data)}: {str(data.get('message') or '')[:120]})",
                provider=self.name,
                kind="rejected",
                attempts=attempts,
            )
        return data.get("result"), attempts

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        name = query.strip().strip("？?。.！!，,")
        entries, attempts = await self._get(self._list_url, {"lemma_title": name, "top_k": BAIKE_LIST_TOP_K})
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            raise self._bad("an entry list that is not a list", attempts)
        usable = [e for e in entries if isinstance(e, dict) and e.get("lemma_id") is not None]
        usable.sort(key=lambda e: e.get("is_default") != 1)  # the main sense first, else as listed
        hits = []
        for entry in usable[: min(self._max_entries, options.max_results)]:
            content, taken = await self._get(
                self._content_url, {"search_type": "lemmaId", "search_key": str(entry["lemma_id"])}
            )
            attempts += taken
            if isinstance(content, dict):
                hits.append(_entry(content, entry))
        return ProviderResponse(web_results(hits, self.name), attempts=attempts)


def _entry(content: dict[str, Any], listed: dict[str, Any]) -> dict[str, Any]:
    title = str(content.get("lemma_title") or listed.get("lemma_title") or "")
    desc = str(content.get("lemma_desc") or listed.get("lemma_desc") or "")
    abstract = str(content.get("abstract_plain") or content.get("summary") or "")
    body = str(content.get("content_plain") or "")
    full = "\n\n".join(x for x in (abstract, body) if x.strip())
    return {
        "url": content.get("url") or listed.get("url"),
        "title": f"{title}（{desc}）" if desc else title,
        "content": str(content.get("summary") or abstract)[:400],
        "raw_content": full or None,
    }


def _code(data: Any) -> str:
    return str(data.get("code")) if isinstance(data, dict) else "none"
