"""Academic engines (seed evidence-retention.md: Scholar / Semantic Scholar / NCBI): Semantic Scholar's
paper search for a general academic question, PubMed through NCBI E-utilities for a biomedical one.

A paper's hit carries its abstract as raw_content: the abstract is the text worth citing, and the
paper's landing page (a script-rendered site) is not read again.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import httpx

from backend.web.providers import HttpProvider, web_results
from backend.web.retry import RetryPolicy, send
from backend.web.types import ProviderResponse, SearchOptions

S2_FIELDS = "title,abstract,url,year,authors,externalIds"
S2_MAX_LIMIT = 100
PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{}/"


class SemanticScholarProvider(HttpProvider):
    """GET {SEMANTIC_SCHOLAR_BASE_URL}/graph/v1/paper/search?query=&limit=&fields=..., with `x-api-key`
    when SEMANTIC_SCHOLAR_API_KEY is set; answers {total, offset, data: [{paperId, title, abstract, url,
    year, authors: [{name}], externalIds}]}."""

    name = "semantic_scholar"
    _HINTS = {400: "the query was refused", 403: "check SEMANTIC_SCHOLAR_API_KEY"}

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        policy: RetryPolicy,
        api_key: str = "",
        max_concurrency: int = 4,
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._url = base_url.rstrip("/") + "/graph/v1/paper/search"

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        params: dict[str, str | int] = {
            "query": query,
            "limit": min(options.max_results, S2_MAX_LIMIT),
            "fields": S2_FIELDS,
        }
        headers = {"x-api-key": self._key} if self._key else {}
        data, attempts = await self._json(
            lambda: self._client.build_request("GET", self._url, params=params, headers=headers),
            secrets=(self._key,),
        )
        papers = data.get("data", []) if isinstance(data, dict) else None
        if not isinstance(papers, list):
            raise self._bad("without a data list", attempts)
        hits = [_paper(p) for p in papers if isinstance(p, dict) and p.get("title")]
        return ProviderResponse(web_results(hits, self.name)[: options.max_results], attempts=attempts)


def _paper(paper: dict[str, Any]) -> dict[str, Any]:
    url = paper.get("url") or f"https://www.semanticscholar.org/paper/{paper.get('paperId', '')}"
    authors = ", ".join(
        str(a.get("name")) for a in paper.get("authors") or [] if isinstance(a, dict) and a.get("name")
    )
    return _hit(url, str(paper["title"]), str(paper.get("abstract") or ""), authors, paper.get("year"))


def _hit(url: str, title: str, abstract: str, authors: str, year: Any) -> dict[str, Any]:
    byline = " ".join(x for x in (authors, f"({year})" if year else "") if x)
    return {
        "url": url,
        "title": title,
        "content": abstract[:400] or title,
        "raw_content": "\n\n".join(x for x in (title, byline, abstract) if x),
        "published_date": str(year) if year else None,
    }


class NcbiProvider(HttpProvider):
    """PubMed through E-utilities: GET {NCBI_BASE_URL}/esearch.fcgi?db=pubmed&term=&retmax=&retmode=json
    -> {esearchresult: {idlist}}, then efetch.fcgi?db=pubmed&id=1,2&retmode=xml -> PubmedArticleSet with
    each article's title and abstract (esummary has no abstract, so efetch is the one second request).
    NCBI_API_KEY, when set, is the `api_key` parameter (10 requests/s instead of 3)."""

    name = "ncbi"
    # An invalid api_key is a 400 ({"error": "API key invalid"}) at E-utilities, not a 401.
    _HINTS = {400: "the query or NCBI_API_KEY was refused", 403: "check NCBI_API_KEY"}

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        policy: RetryPolicy,
        api_key: str = "",
        max_concurrency: int = 3,
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._base = base_url.rstrip("/")

    def _request(self, tool: str, params: dict[str, Any]) -> Callable[[], httpx.Request]:
        params = {"db": "pubmed", **params, **({"api_key": self._key} if self._key else {})}
        url = f"{self._base}/{tool}"
        return lambda: self._client.build_request("GET", url, params=params)

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        found, attempts = await self._json(
            self._request("esearch.fcgi", {"term": query, "retmax": options.max_results, "retmode": "json"}),
            secrets=(self._key,),
        )
        result = found.get("esearchresult") if isinstance(found, dict) else None
        ids = result.get("idlist") if isinstance(result, dict) else None
        if not isinstance(ids, list):
            raise self._bad("without an esearchresult.idlist", attempts)
        ids = [str(i) for i in ids if str(i).isdigit()][: options.max_results]
        if not ids:
            return ProviderResponse([], attempts=attempts)
        xml, taken = await self._text(
            self._request("efetch.fcgi", {"id": ",".join(ids), "retmode": "xml", "rettype": "abstract"})
        )
        attempts += taken
        try:
            root = ET.fromstring(xml)
        except ET.ParseError as exc:
            raise self._bad(f"an efetch document that is not XML ({exc})", attempts) from exc
        hits = [_article(a) for a in root.iter("PubmedArticle")]
        by_id = {h["pmid"]: h for h in hits if h["pmid"]}
        ordered = [by_id[i] for i in ids if i in by_id]  # esearch's relevance order
        return ProviderResponse(web_results(ordered, self.name), attempts=attempts)

    async def _text(self, build: Callable[[], httpx.Request]) -> tuple[str, int]:
        async with self.slots:
            response, attempts = await send(
                self._client, build, provider=self.name, policy=self._policy, secrets=(self._key,)
            )
        return response.text, attempts


def _article(article: ET.Element) -> dict[str, Any]:
    pmid = (article.findtext(".//MedlineCitation/PMID") or "").strip()
    heading = article.find(".//ArticleTitle")
    title = "".join(heading.itertext()) if heading is not None else ""
    parts = []
    for node in article.iter("AbstractText"):
        label = node.get("Label")
        text = "".join(node.itertext()).strip()
        parts.append(f"{label}: {text}" if label else text)
    authors = ", ".join(
        " ".join(x for x in (a.findtext("ForeName"), a.findtext("LastName")) if x)
        for a in article.iter("Author")
    )
    year = article.findtext(".//PubDate/Year")
    return {"pmid": pmid, **_hit(PUBMED_URL.format(pmid), title.strip(), "\n".join(parts), authors, year)}
