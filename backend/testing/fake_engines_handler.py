"""The fake web handler's routes for the research engines (contracts: backend/testing/fake_engines.py).
A mixin of FakeWebHandler: it uses the handler's gate (latency, failures, malformed bodies), its JSON
writer and the server's corpus."""

from __future__ import annotations

from typing import Any, Protocol

from backend.testing.fake_engines import (
    BAIKE_CONTENT,
    BAIKE_LIST,
    EUTILS,
    S2_SEARCH,
    ncbi_summary,
    pubmed_set,
)
from backend.testing.fake_web_state import State, clean_query, terms


class _Handler(Protocol):
    fake: Any
    state: State
    headers: Any

    def _gate(self, query: str) -> bool: ...

    def _found(
        self,
        query: str,
        max_results: int,
        raw: bool,
        include: list[str],
        exclude: list[str],
        engine: str | None = None,
    ) -> list[dict[str, Any]]: ...

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None: ...

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None: ...

    def _bearer(self) -> str | None: ...


def _summary(text: str) -> str:
    """Bocha's AI summary as the seed saw it: prose kept, tables and lists (later paragraphs) lost."""
    return text.split("\n\n", 1)[0][:150]


class EngineRoutes:
    """Bocha, Serper, Baike, Semantic Scholar and NCBI on the fake web."""

    def bocha(self: _Handler, body: Any) -> None:
        if not isinstance(body, dict):
            return self._json(400, {"code": 400, "msg": "body must be a JSON object", "data": None})
        if self.fake.api_key and self._bearer() != self.fake.api_key:
            return self._json(401, {"code": 401, "msg": "Invalid API KEY", "data": None})
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return self._json(400, {"code": 400, "msg": "query is required", "data": None})
        count = max(1, min(50, int(body.get("count") or 10)))
        if not self._gate(query):
            return None
        found = self._found(query, count, True, [], [], "bocha")
        value = []
        for r in found:
            item = {
                "id": r["url"],
                "name": r["title"],
                "url": r["url"],
                "displayUrl": r["url"],
                "snippet": r["content"],
                "siteName": r["url"].split("/")[4] if r["url"].count("/") > 4 else "",
                "datePublished": (r.get("published_date") or "") + "T08:00:00+08:00",
                "dateLastCrawled": "2024-06-02T00:00:00Z",
            }
            if body.get("summary"):
                item["summary"] = _summary(r.get("raw_content") or r["content"])
            value.append(item)
        pages = {"webSearchUrl": "", "totalEstimatedMatches": len(value), "value": value}
        payload = {"_type": "SearchResponse", "queryContext": {"originalQuery": query}, "webPages": pages}
        self._json(200, {"code": 200, "log_id": "fake", "msg": None, "data": payload})
        return None

    def serper(self: _Handler, body: Any) -> None:
        if self.fake.api_key and self.headers.get("X-API-KEY") != self.fake.api_key:
            return self._json(403, {"message": "Unauthorized.", "statusCode": 403})
        if not isinstance(body, dict) or not isinstance(body.get("q"), str) or not body["q"].strip():
            return self._json(400, {"message": "Missing query parameter q", "statusCode": 400})
        query = body["q"]
        num = max(1, min(100, int(body.get("num") or 10)))
        if not self._gate(query):
            return None
        found = self._found(query, num, False, [], [], "serper")
        organic = [
            {
                "title": r["title"],
                "link": r["url"],
                "snippet": r["content"],
                "date": r.get("published_date"),
                "position": k,
            }
            for k, r in enumerate(found, 1)
        ]
        payload: dict[str, Any] = {"searchParameters": {"q": query, "num": num, "type": "search"}}
        payload.update(self.state.boxes.get(clean_query(query).casefold(), {}))
        payload["organic"] = organic
        self._json(200, payload)
        return None

    def engine_get(self: _Handler, path: str, params: dict[str, str]) -> bool:
        """Answer a GET for one of the engines; False when `path` is none of theirs."""
        if path in (BAIKE_LIST, BAIKE_CONTENT):
            _baike(self, path, params)
        elif path == S2_SEARCH:
            _s2(self, params)
        elif path.startswith(EUTILS):
            _eutils(self, path.removeprefix(EUTILS), params)
        else:
            return False
        return True


def _baike(h: _Handler, path: str, params: dict[str, str]) -> None:
    if h.fake.api_key and h._bearer() != h.fake.api_key:
        return h._json(401, {"code": "401", "message": "invalid api key", "request_id": "fake"})
    base = h.fake.base_url
    if path == BAIKE_LIST:
        title = params.get("lemma_title", "")
        if not h._gate(title):
            return None
        top_k = int(params.get("top_k") or 5)
        name = "" if h.state.behaviour.with_keywords(title).empty else clean_query(title)
        listed = [e.listed(base) for e in h.state.baike if e.title == name][:top_k]
        return h._json(200, {"request_id": "fake", "code": "0", "message": "", "result": listed})
    kind, key = params.get("search_type"), params.get("search_key", "")
    if kind not in ("lemmaId", "lemmaTitle"):
        return h._json(400, {"code": "400", "message": "search_type must be lemmaId or lemmaTitle"})
    if not h._gate(key):
        return None
    match = [e for e in h.state.baike if (str(e.lemma_id) if kind == "lemmaId" else e.title) == key]
    match.sort(key=lambda e: not e.is_default)
    result = match[0].content(base) if match else None
    return h._json(200, {"request_id": "fake", "code": "0", "message": "", "result": result})


def _s2(h: _Handler, params: dict[str, str]) -> None:
    key = h.headers.get("x-api-key")
    if key is not None and h.fake.api_key and key != h.fake.api_key:
        return h._json(403, {"message": "Forbidden"})
    query = params.get("query", "")
    if not query.strip():
        return h._json(400, {"error": "Missing required parameter: 'query'"})
    if not h._gate(query):
        return None
    limit = int(params.get("limit") or 10)
    papers = [p for p in _ranked(h, query)][:limit]
    data = [p.s2(h.fake.base_url) for p in papers]
    h._json(
        200,
        {"total": len(data), "offset": 0, **({"next": limit} if len(data) == limit else {}), "data": data},
    )
    return None


def _eutils(h: _Handler, tool: str, params: dict[str, str]) -> None:
    key = params.get("api_key")
    if key is not None and h.fake.api_key and key != h.fake.api_key:
        return h._json(400, {"error": "API key invalid", "api-key": key, "type": "invalid"})
    if params.get("db") != "pubmed":
        return h._json(400, {"error": "Invalid db name specified: " + str(params.get("db"))})
    pubmed = [p for p in h.state.papers if p.pmid]
    if tool == "esearch.fcgi":
        term = params.get("term", "")
        if not h._gate(term):
            return None
        ids = [p.pmid for p in _ranked(h, term) if p.pmid][: int(params.get("retmax") or 20)]
        result = {"count": str(len(ids)), "retmax": str(len(ids)), "retstart": "0", "idlist": ids}
        return h._json(200, {"header": {"type": "esearch", "version": "0.3"}, "esearchresult": result})
    wanted = [i for i in params.get("id", "").split(",") if i]
    papers = [p for i in wanted for p in pubmed if p.pmid == i]
    if not h._gate(" ".join(p.title for p in papers)):
        return None
    if tool == "esummary.fcgi":
        return h._json(200, ncbi_summary(papers))
    if tool == "efetch.fcgi":
        return h._send(200, pubmed_set(papers).encode(), "text/xml; charset=utf-8")
    return h._json(404, {"error": f"unknown tool {tool}"})


def _ranked(h: _Handler, query: str) -> list[Any]:
    """Papers sharing a term with the query, most shared first (fake: keywords ignored)."""
    if h.state.behaviour.with_keywords(query).empty:
        return []
    wanted = terms(clean_query(query))
    scored = [(len(wanted & terms(p.title + " " + p.abstract)), p) for p in h.state.papers]
    return [p for score, p in sorted(scored, key=lambda x: -x[0]) if score]
