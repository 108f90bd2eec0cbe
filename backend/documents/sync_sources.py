"""What `sync` compares the store with: the files of a folder, or the pages of a URL list, each under a
stable external id `<name>/<path relative to the folder>` or `<name>/<url>`.

Pages are read by the web reader (backend/web/pages.py) through the SSRF-guarded transport, with its
size, redirect and time limits (WEB_FETCH_MAX_BYTES, WEB_FETCH_MAX_REDIRECTS, WEB_DEEP_READ_TIMEOUT_S);
only the text limit is MAX_DOCUMENT_CHARS instead of the deep read's WEB_FETCH_MAX_CHARS excerpt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from backend.config import Settings
from backend.errors import InvalidInput
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import SUPPORTED_SUFFIXES, load_path
from backend.ingest.sandbox import ParseLimits
from backend.web.pages import PageLimits, PageReader, url_policy
from backend.web.safety import guarded_transport

PAGE_CONCURRENCY = 4


@dataclass(frozen=True)
class Unreadable:
    """A source entry that could not be read now: reported, and its stored documents are kept."""

    external_id: str
    reason: str


SyncItem = LoadedDocument | Unreadable


def folder_items(root: Path, prefix: str, limits: ParseLimits) -> Iterator[SyncItem]:
    """Every supported file under `root` (hidden entries skipped), sorted by relative path."""
    files = sorted(
        p
        for p in root.rglob("*")
        if p.suffix.lower() in SUPPORTED_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for file in files:
        ident = prefix + file.relative_to(root).as_posix()
        for item in load_path(file, limits=limits):
            if isinstance(item, LoadFailure):
                yield Unreadable(ident, item.reason)
            elif item.external_id is not None:  # a JSONL line: its own id inside the file
                yield replace(item, external_id=f"{ident}#{item.external_id}")
            else:
                yield replace(item, external_id=ident, source=ident)


def read_url_list(path: Path) -> list[str]:
    """The URLs of a list file: one a line; blank lines and lines starting with # are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the URL list {path}: {exc}") from exc
    urls = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    return list(dict.fromkeys(urls))


async def url_items(
    urls: list[str], prefix: str, settings: Settings, transport: httpx.AsyncBaseTransport | None = None
) -> list[SyncItem]:
    """Each page read with the web reader's protections; one that cannot be read is Unreadable."""
    policy = url_policy(settings)
    limits = replace(PageLimits.from_settings(settings), max_chars=settings.max_document_chars)
    gate = asyncio.Semaphore(PAGE_CONCURRENCY)
    results: list[SyncItem | None] = [None] * len(urls)
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(settings.web_deep_read_timeout_s),
        transport=transport or guarded_transport(policy.guard),
        follow_redirects=False,  # PageReader follows them itself, checking every hop
    ) as client:
        reader = PageReader(client, policy=policy, limits=limits)

        async def one(index: int, url: str) -> None:
            async with gate:
                results[index] = await _read(reader, url, prefix + url, limits.timeout_s)

        async with asyncio.TaskGroup() as group:
            for index, url in enumerate(urls):
                group.create_task(one(index, url))
    return [r for r in results if r is not None]


async def _read(reader: PageReader, url: str, ident: str, timeout_s: float) -> SyncItem:
    try:
        async with asyncio.timeout(timeout_s):
            page = await reader.read(url)
    except TimeoutError:
        return Unreadable(ident, f"no answer within {timeout_s:g} s (WEB_DEEP_READ_TIMEOUT_S)")
    except Exception as exc:  # refused (SSRF guard), HTTP error, not a page: this URL only
        return Unreadable(ident, f"{type(exc).__name__}: {exc}")
    return LoadedDocument(
        title=page.title or url,
        content=page.text,
        source=url,
        filename=None,
        content_type="text/plain",
        external_id=ident,
    )
