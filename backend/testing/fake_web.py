"""A fake web on 127.0.0.1 for tests and the demo: Tavily's `POST /search`, SearXNG's
`GET /search?format=json`, the research engines (Bocha, Serper, Baike, Semantic Scholar, NCBI:
backend/testing/fake_engines.py) and the pages their results link to. Nothing here touches the internet.

Behaviours are chosen per server (`server.behaviour = Behaviour(...)`) or per query with keywords the
ranking ignores: `fake:latency=800` (ms), `fake:429` / `fake:503` (every time) or `fake:429x2` (the
first two requests of that query), `fake:retry-after=1`, `fake:hang=30` (s, longer than any client
timeout), `fake:empty`, `fake:dupes` (every URL again with tracking parameters and a fragment),
`fake:neardup` (a lightly edited copy of each hit on a mirror site). It records every request, and
counts clients that hung up while it was still working (`disconnects`).

    python -m backend.testing.fake_web --port 8201
"""

from __future__ import annotations

import argparse
import math
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

from backend.ingest.html_text import html_to_article_text
from backend.testing.fake_engines import (
    BAIKE_CONTENT,
    BAIKE_ENTRIES,
    BAIKE_LIST,
    EUTILS,
    PAPERS,
    BaikeEntry,
    Paper,
)
from backend.testing.fake_web_corpus import PAGES, FakePage, render
from backend.testing.fake_web_handler import make_handler
from backend.testing.fake_web_state import (
    SNIPPET_CHARS,
    Behaviour,
    RecordedRequest,
    State,
    clean_query,
    terms,
)
from backend.web.urls import host_matches


class FakeWebServer:
    """The fake web. Use as a context manager (tests) or call serve_forever() (the demo)."""

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1", api_key: str | None = "fake-key") -> None:
        self.api_key = api_key
        self._state = State()
        self._server = ThreadingHTTPServer((host, port), make_handler(self, self._state))
        self._server.daemon_threads = True
        self._server.handle_error = lambda *args: None  # type: ignore[method-assign]  # clients hang up
        self._thread: threading.Thread | None = None
        self._terms: dict[str, set[str]] = {}  # page path -> its terms (pages are added, never changed)
        for page in PAGES:
            self.add_page(page)
        for entry in BAIKE_ENTRIES:
            self.add_baike_entry(entry)
        for paper in PAPERS:
            self.add_paper(paper)

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host if isinstance(host, str) else host.decode()}:{port}"

    def __enter__(self) -> FakeWebServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.02)

    def close(self) -> None:
        self._state.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    # --- what tests set and read -----------------------------------------------------------------
    @property
    def behaviour(self) -> Behaviour:
        return self._state.behaviour

    @behaviour.setter
    def behaviour(self, value: Behaviour) -> None:
        self._state.behaviour = value

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    def count(self, path: str = "/search") -> int:
        """Requests received for `path` (a prefix: "/pages/" counts every page read)."""
        return sum(r.path.startswith(path) for r in self.requests)

    @property
    def disconnects(self) -> int:
        return self._state.disconnects

    @property
    def max_in_flight(self) -> int:
        return self._state.max_in_flight

    def wait_for_disconnects(self, n: int = 1, timeout_s: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.disconnects >= n:
                return True
            time.sleep(0.01)
        return False

    def register(self, query: str, results: list[dict[str, Any]]) -> None:
        """Answer `query` (as typed, fake: keywords aside) with these results instead of the corpus's."""
        self._state.registered[clean_query(query).casefold()] = results

    def add_page(self, page: FakePage | None = None, *, path: str = "", html: str = "") -> str:
        """Serve a page (a FakePage, or raw html at path); returns its URL."""
        if page is not None:
            path, html = page.path, render(page)
        self._state.pages[path] = (page, html)
        self._terms.pop(path, None)
        return self.base_url + path

    def page_url(self, slug: str) -> str:
        return next(
            self.base_url + p for p, (page, _) in self._state.pages.items() if page and page.slug == slug
        )

    def add_baike_entry(self, entry: BaikeEntry) -> str:
        """A Baike entry (found by its exact title), also served as a page; returns its URL."""
        self._state.baike.append(entry)
        html = f"<html><body><h1>{entry.title}</h1>" + "".join(f"<p>{p}</p>" for p in entry.paragraphs)
        return self.add_page(path=entry.path, html=html + "</body></html>")

    def add_paper(self, paper: Paper) -> None:
        """A paper for Semantic Scholar (and PubMed, when it has a pmid)."""
        self._state.papers.append(paper)

    def register_boxes(self, query: str, **boxes: dict[str, Any]) -> None:
        """Serper's answerBox / knowledgeGraph for `query`."""
        self._state.boxes[clean_query(query).casefold()] = boxes

    def engine_settings(self, *providers: str) -> dict[str, Any]:
        """Settings that point every research engine at this server (WEB_SEARCH_PROVIDERS=providers)."""
        base, key = self.base_url, self.api_key or "fake-key"
        return {
            "web_search_providers": list(providers),
            "bocha_api_key": key,
            "bocha_base_url": base,
            "serper_api_key": key,
            "serper_base_url": base,
            "baike_api_key": key,
            "baike_list_url": base + BAIKE_LIST,
            "baike_content_url": base + BAIKE_CONTENT,
            "semantic_scholar_base_url": base,
            "ncbi_base_url": base + EUTILS.rstrip("/"),
            "tavily_api_key": key,
            "tavily_base_url": base,
            "searxng_url": base,
        }

    # --- search ----------------------------------------------------------------------------------
    def results_for(
        self,
        query: str,
        max_results: int,
        raw: bool,
        include: list[str],
        exclude: list[str],
        *,
        engine: str | None = None,
    ) -> list[dict[str, Any]]:
        """Corpus pages ranked by the query terms they share, a rare term weighing more (idf, as a real
        engine ranks; registered results win); `engine`: only pages that engine finds (FakePage.engines;
        none named: every web engine)."""
        registered = self._state.registered.get(clean_query(query).casefold())
        if registered is not None:
            return [dict(r) for r in registered][:max_results]
        wanted = terms(clean_query(query))
        weights = self._idf(wanted)
        total = sum(weights.values()) or 1.0
        scored = []
        for path, (page, html) in self._state.pages.items():
            if (
                page is None
                or (engine and page.engines and engine not in page.engines)
                or (include and not host_matches(page.site, include))
                or host_matches(page.site, exclude)
            ):
                continue
            overlap = sum(weights[t] for t in wanted & self._page_terms(path, page)) / total
            if overlap > 0:
                scored.append((overlap, path, page, html))
        scored.sort(key=lambda item: -item[0])
        return [self._result(p, page, html, overlap, raw) for overlap, p, page, html in scored[:max_results]]

    def _page_terms(self, path: str, page: FakePage) -> set[str]:
        found = self._terms.get(path)
        if found is None:
            found = self._terms[path] = terms(page.title + " " + page.text)
        return found

    def _idf(self, wanted: set[str]) -> dict[str, float]:
        pages = [(path, page) for path, (page, _) in self._state.pages.items() if page is not None]
        n = len(pages)
        return {
            t: math.log(1 + n / (1 + sum(t in self._page_terms(path, page) for path, page in pages)))
            for t in wanted
        }

    def _result(self, path: str, page: FakePage, html: str, overlap: float, raw: bool) -> dict[str, Any]:
        text = html_to_article_text(html)[1]
        return {
            "url": self.base_url + path,
            "title": page.title,
            "content": page.text[:SNIPPET_CHARS],
            "score": round(0.5 + overlap / 2, 4),
            "raw_content": text if raw else None,
            "published_date": page.published,
        }

    def vary(self, results: list[dict[str, Any]], behaviour: Behaviour) -> list[dict[str, Any]]:
        out = list(results)
        if behaviour.duplicates:
            out += [
                {**r, "url": r["url"] + "/?utm_source=fake&utm_medium=test#top", "score": 0.3}
                for r in results
            ]
        if behaviour.near_duplicates:
            for r in results:
                mirror = r["url"].replace("/pages/", "/pages/mirror.example/", 1)
                content = "转载：" + r["content"].replace("，", ",").replace("。", ".")
                out.append({**r, "url": mirror, "content": content, "score": 0.2})
        return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8201)
    parser.add_argument("--api-key", default="fake-key")
    args = parser.parse_args(argv)
    server = FakeWebServer(host=args.host, port=args.port, api_key=args.api_key)
    print(f"fake web on {server.base_url} ({len(PAGES)} pages). Point the backend at it with:")
    print(
        f"  TAVILY_BASE_URL={server.base_url} TAVILY_API_KEY={args.api_key} WEB_ALLOW_PRIVATE_ADDRESSES=true"
    )
    print(f"  (or WEB_SEARCH_PROVIDER=searxng SEARXNG_URL={server.base_url})")
    print("  or the research engines, each query routed to one of them:")
    engines = server.engine_settings("bocha", "serper", "baike", "semantic_scholar", "ncbi")
    for name, value in engines.items():
        if not name.startswith(("tavily", "searxng")):
            shown = ",".join(value) if isinstance(value, list) else value
            print(f"  {name.upper()}={shown}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
