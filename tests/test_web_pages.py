"""Full-page reads: article text without page chrome, bounded bytes/characters/time, refused non-pages;
ingestion's HTML conversion is unchanged."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from backend.errors import PageFetchError
from backend.ingest.html_text import html_to_article_text, html_to_text
from backend.testing.fake_web_corpus import PAGES, render
from backend.web import AddressGuard, PageLimits, PageReader, UrlPolicy, WebResult, deep_read
from backend.web.types import utc_now

PANDA = next(p for p in PAGES if p.slug == "giant-panda")
OPEN = UrlPolicy(guard=AddressGuard(allow_private=True))


def test_article_text_keeps_the_article_and_drops_page_chrome():
    title, text = html_to_article_text(render(PANDA))
    assert title == "大熊猫"
    assert text.startswith("# 大熊猫")  # the article's own header (its h1) is kept
    assert "百分之九十九是竹子" in text
    for chrome in (
        "首页 | 百科",
        "相关推荐",
        "分享到微信",
        "网友评论",
        "版权所有",
        "window.analytics",
        "Search",
    ):
        assert chrome not in text


def test_without_an_article_element_the_body_is_cleaned():
    html = (
        "<body><header>Site name</header><nav>Home | About</nav><div id='main'>"
        + "<p>Paragraph of real content that readers came for.</p>" * 6
        + "</div><div class='related-posts'>Related posts</div><footer>(c) Site</footer></body>"
    )
    text = html_to_article_text(html)[1]
    assert "real content" in text
    assert not any(junk in text for junk in ("Site name", "Home | About", "Related posts", "(c) Site"))


def test_a_block_named_like_chrome_that_holds_the_content_is_kept():
    html = (
        "<body><div class='page-with-sidebar'>" + "<p>The whole story is in here.</p>" * 10 + "</div></body>"
    )
    assert "The whole story" in html_to_article_text(html)[1]


def test_ingestion_html_conversion_still_keeps_header_footer_and_forms():
    html = "<body><header>Release notes</header><p>Body</p><form>Field</form><footer>Contact</footer></body>"
    text = html_to_text(html)[1]
    assert all(part in text for part in ("Release notes", "Body", "Field", "Contact"))


def read(fake_web, path, **limits):
    async def go():
        async with httpx.AsyncClient(timeout=5) as client:
            return await PageReader(client, policy=OPEN, limits=PageLimits(**limits)).read(
                fake_web.base_url + path
            )

    return asyncio.run(go())


def test_a_page_is_read_as_clean_text(fake_web):
    page = read(fake_web, PANDA.path)
    assert (page.title, page.truncated) == ("大熊猫", False)
    assert "野生大熊猫数量为一千八百六十四只" in page.text
    assert "版权所有" not in page.text


def test_bytes_beyond_the_limit_are_never_downloaded_and_the_page_is_marked_truncated(fake_web):
    page = read(fake_web, "/big?kb=4096", max_bytes=64 * 1024)
    assert page.truncated
    assert len(page.text.encode()) <= 64 * 1024


def test_characters_beyond_the_limit_are_cut(fake_web):
    page = read(fake_web, PANDA.path, max_chars=100)
    assert page.truncated
    assert len(page.text) == 100


@pytest.mark.parametrize(
    ("path", "message"),
    [("/binary", "not a web page"), ("/status/404", "HTTP 404"), ("/status/500", "HTTP 500")],
)
def test_what_is_not_a_readable_page_is_a_page_fetch_error(fake_web, path, message):
    with pytest.raises(PageFetchError, match=message):
        read(fake_web, path)


def test_declared_legacy_charsets_and_plain_text_are_decoded(fake_web):
    assert "国标码网页" in read(fake_web, "/gbk").text
    assert read(fake_web, "/text").text == "Plain text page.\nSecond line."


def hit(url, raw=None):
    return WebResult(
        url=url, title="t", content="snippet", provider="tavily", fetched_at=utc_now(), raw_content=raw
    )


def run_deep_read(results, **kwargs):
    async def go():
        async with httpx.AsyncClient(timeout=10) as client:
            reader = PageReader(client, policy=OPEN, limits=PageLimits())
            return await deep_read(reader, results, **kwargs)

    return asyncio.run(go())


def test_deep_read_reads_only_the_top_n_hits_without_raw_content(fake_web):
    urls = [fake_web.page_url(p.slug) for p in PAGES[:4]]
    results = [hit(urls[0], raw="already read"), hit(urls[1]), hit(urls[2]), hit(urls[3])]
    report = run_deep_read(results, top_n=2, timeout_s=5)
    assert (report.read, report.failed) == (2, 0)
    assert fake_web.count("/pages/") == 2
    assert results[0].raw_content == "already read"
    assert results[1].raw_content
    assert results[2].raw_content
    assert results[3].raw_content is None


def test_deep_read_gives_up_at_its_time_bound_and_keeps_the_snippets(fake_web):
    results = [hit(f"{fake_web.base_url}/slow?ms=20000"), hit(fake_web.page_url("rosetta-stone"))]
    started = time.monotonic()
    report = run_deep_read(results, top_n=2, timeout_s=0.5)
    assert time.monotonic() - started < 3
    assert (report.read, report.failed) == (1, 1)
    assert results[0].raw_content is None
    assert results[0].content == "snippet"
    assert "Champollion" in results[1].raw_content
    assert fake_web.wait_for_disconnects(1)  # the slow page's connection was dropped, not left running


def test_a_refused_page_is_reported_not_raised(fake_web):
    results = [hit("http://169.254.169.254/latest/meta-data/")]

    async def go():
        async with httpx.AsyncClient() as client:
            reader = PageReader(client, policy=UrlPolicy(), limits=PageLimits())
            return await deep_read(reader, results, top_n=1, timeout_s=5)

    report = asyncio.run(go())
    assert report.failed == 1
    assert "UnsafeURL" in report.errors[0]
