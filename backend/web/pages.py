"""Full-page reads of web hits (seed: multi-agent-research.md, URL deep read): bounded bytes per page,
redirects followed by hand so every hop is checked again, HTML cleaned to the article text."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin

import httpx

from backend.config import Settings
from backend.errors import DomainError, PageFetchError
from backend.ingest.decoding import decode_text
from backend.ingest.sandbox import DEFAULT_LIMITS, ParseLimits, parse_html_page
from backend.text.normalize import clean_document_text
from backend.web.body import ACCEPT_ENCODING, read_body
from backend.web.safety import AddressGuard, UrlPolicy
from backend.web.types import WebResult

logger = logging.getLogger(__name__)

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("text/plain",)
USER_AGENT = "pgrag/0.1 (retrieval-augmented answers; reads the pages a web search returned)"


@dataclass(frozen=True)
class PageLimits:
    max_bytes: int = 1_000_000
    max_chars: int = 15_000
    max_redirects: int = 3
    timeout_s: float = 5.0
    parse: ParseLimits = DEFAULT_LIMITS  # the HTML is parsed in the sandbox (backend/ingest/sandbox.py)

    @classmethod
    def from_settings(cls, settings: Settings) -> PageLimits:
        return cls(
            max_bytes=settings.web_fetch_max_bytes,
            max_chars=settings.web_fetch_max_chars,
            max_redirects=settings.web_fetch_max_redirects,
            timeout_s=settings.web_deep_read_timeout_s,
            parse=ParseLimits(
                timeout_s=min(settings.parse_timeout_s, settings.web_deep_read_timeout_s),
                memory_mb=settings.parse_memory_mb,
            ),
        )


@dataclass(frozen=True)
class Page:
    url: str  # after redirects
    title: str | None
    text: str
    truncated: bool  # the page was longer than WEB_FETCH_MAX_BYTES or WEB_FETCH_MAX_CHARS
    # Why the body was cut at WEB_FETCH_MAX_BYTES (a bomb, or a huge page: worth a note in the
    # diagnostics); None when it was read whole. Cutting the text at WEB_FETCH_MAX_CHARS is routine.
    body_cut: str | None = None


def url_policy(settings: Settings) -> UrlPolicy:
    return UrlPolicy(
        guard=AddressGuard(allow_private=settings.web_allow_private_addresses),
        allow_domains=tuple(settings.web_allow_domains),
        deny_domains=tuple(settings.web_deny_domains),
    )


class PageReader:
    """Reads pages through a client built on safety.guarded_transport (the connect-time address check)."""

    def __init__(self, client: httpx.AsyncClient, *, policy: UrlPolicy, limits: PageLimits) -> None:
        self._client = client
        self._policy = policy
        self._limits = limits

    async def read(self, url: str) -> Page:
        """The page's readable text; UnsafeURL or PageFetchError when it cannot be read."""
        current = url
        for _ in range(self._limits.max_redirects + 1):
            target = self._policy.check(current)
            request = self._client.build_request(
                "GET",
                target,
                headers={
                    "User-Agent": USER_AGENT,
                    "Accept": "text/html, text/plain;q=0.8",
                    "Accept-Encoding": ACCEPT_ENCODING,  # what read_body can inflate within bounds
                },
            )
            response = await self._client.send(request, stream=True)
            try:
                if response.is_redirect and "location" in response.headers:
                    current = urljoin(str(target), response.headers["location"])
                    continue
                return await self._page(response, str(target))
            finally:
                await response.aclose()
        raise PageFetchError(f"more than {self._limits.max_redirects} redirects (WEB_FETCH_MAX_REDIRECTS)")

    async def _page(self, response: httpx.Response, url: str) -> Page:
        if response.status_code != 200:
            raise PageFetchError(f"HTTP {response.status_code}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type and media_type not in _HTML_TYPES + _TEXT_TYPES:
            raise PageFetchError(f"not a web page ({media_type})")
        raw = await read_body(response, self._limits.max_bytes)
        text = _decode(raw.data, response.charset_encoding)
        if media_type in _TEXT_TYPES:
            title, body = None, clean_document_text(text)
        else:
            # lexbor's cost grows with the square of the nesting depth: never on the event loop
            title, body = await parse_html_page(text, self._limits.parse)
        truncated = raw.truncated is not None or len(body) > self._limits.max_chars
        body = body[: self._limits.max_chars]
        if not body.strip():
            raise PageFetchError("no readable text")
        return Page(url=url, title=title, text=body, truncated=truncated, body_cut=raw.truncated)


def _decode(data: bytes, charset: str | None) -> str:
    if charset:
        try:
            return data.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return decode_text(data)
    except DomainError as exc:
        raise PageFetchError(str(exc)) from exc


@dataclass
class DeepReadReport:
    read: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


async def deep_read(
    reader: PageReader,
    results: list[WebResult],
    *,
    top_n: int,
    timeout_s: float,
    report: DeepReadReport | None = None,
) -> DeepReadReport:
    """Read the top_n hits that lack raw_content, in place (results[i] replaced as each page arrives,
    so a caller cancelled mid-way keeps what was read). Pages still loading at timeout_s are dropped."""
    report = report if report is not None else DeepReadReport()
    targets = [i for i, r in enumerate(results) if r.raw_content is None][:top_n]

    async def one(index: int) -> None:
        hit = results[index]
        try:
            page = await reader.read(hit.url)
        except Exception as exc:  # one unreadable page (refused, HTTP error, odd markup) never fails the rest
            report.failed += 1
            _note(report, f"{hit.url}: {type(exc).__name__}: {exc}")
            return
        results[index] = hit.model_copy(
            update={"raw_content": page.text, "title": hit.title or page.title or ""}
        )
        report.read += 1
        if page.body_cut:
            _note(report, f"{hit.url}: read in part: {page.body_cut}")

    try:
        async with asyncio.timeout(timeout_s), asyncio.TaskGroup() as group:
            for index in targets:
                group.create_task(one(index))
    except TimeoutError:
        unfinished = len(targets) - report.read - report.failed
        report.failed += unfinished
        _note(report, f"{unfinished} page(s) still loading after {timeout_s:g} s (WEB_DEEP_READ_TIMEOUT_S)")
    return report


def _note(report: DeepReadReport, message: str) -> None:
    logger.info("web deep read: %s", message)
    report.errors.append(message[:300])
