"""Cross-source dedup: canonical URLs, content hashes, near duplicates (Chinese included), local wins."""

from __future__ import annotations

import pytest

from backend.testing.fake_web_corpus import PAGES
from backend.web import LocalText, WebResult, canonical_url, content_hash, cross_source_dedup
from backend.web.dedup import Fingerprint
from backend.web.types import utc_now

TEXT = {p.slug: p.text for p in PAGES}
PANDA, TEA, DUJIANGYAN, ROSETTA = (
    TEXT["giant-panda"],
    TEXT["longjing-tea"],
    TEXT["dujiangyan"],
    TEXT["rosetta-stone"],
)
# A syndicated copy: another source line, half-width punctuation, two phrases reworded.
PANDA_COPY = "来源：示例新闻网\n" + PANDA.replace("，", ",").replace("。", ".").replace(
    "主要栖息在", "主要生活在"
).replace("一千八百六十四只", "1864只")
HEADER = "示例百科网 首页 | 百科 | 新闻 | 图片 | 视频 登录 注册 "
FOOTER = (
    " 相关推荐 热门词条排行榜 今日新闻 版权所有 © 2024 示例百科网 京ICP备000000号 关于我们 联系方式 免责声明"
)


def hit(url, content, raw=None):
    return WebResult(
        url=url, title="", content=content, provider="tavily", fetched_at=utc_now(), raw_content=raw
    )


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTPS://Example.COM:443/a/b/?utm_source=x&b=2&a=1#frag", "https://example.com/a/b?a=1&b=2"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:8080/%7euser/", "http://example.com:8080/~user"),
        (
            "https://user:pw@example.com/x?gclid=1&fbclid=2&spm=a.b&q=%E4%B8%AD",
            "https://example.com/x?q=%E4%B8%AD",
        ),
        ("https://example.com/x?b=2&a=1&utm_campaign=z", "https://example.com/x?a=1&b=2"),
        ("http://[2001:DB8::1]:80/p/", "http://[2001:db8::1]/p"),
        ("mailto:someone@example.com", "mailto:someone@example.com"),
    ],
)
def test_canonical_url(url, canonical):
    assert canonical_url(url) == canonical


def test_content_hash_ignores_width_case_and_whitespace_but_not_words():
    assert content_hash("Hello，  World\n大熊猫") == content_hash("hello, world 大熊猫")
    assert content_hash("大熊猫吃竹子") != content_hash("大熊猫吃苹果")


def test_chinese_near_duplicates_are_recognised():
    similarity = Fingerprint.of(PANDA_COPY).near_duplicate_of(Fingerprint.of(PANDA), 0.8)
    assert similarity is not None
    assert similarity >= 0.8


def test_distinct_pages_sharing_site_boilerplate_are_not_duplicates():
    a, b = Fingerprint.of(HEADER + TEA + FOOTER), Fingerprint.of(HEADER + DUJIANGYAN + FOOTER)
    assert a.near_duplicate_of(b, 0.8) is None
    assert b.near_duplicate_of(a, 0.8) is None
    assert a.jaccard(b) < 0.3


def test_a_snippet_is_contained_in_its_page_but_the_page_is_not_contained_in_the_snippet():
    snippet, page = Fingerprint.of(PANDA[:120]), Fingerprint.of(PANDA)
    assert snippet.contained_in(page) > 0.9
    assert page.contained_in(snippet) < 0.7


def test_english_near_duplicates_are_recognised_and_other_pages_are_not():
    edited = ROSETTA.replace("granodiorite stele", "granodiorite stele,").replace("in Memphis", "at Memphis")
    assert Fingerprint.of(edited).near_duplicate_of(Fingerprint.of(ROSETTA), 0.8)
    assert Fingerprint.of(TEXT["kilimanjaro"]).near_duplicate_of(Fingerprint.of(ROSETTA), 0.8) is None


def test_local_evidence_wins_over_web_hits_that_repeat_it():
    local = [
        LocalText(id="chunk-1", text=PANDA),
        LocalText(id="chunk-2", text=TEA, url="https://baike.example.cn/longjing-tea"),
    ]
    web = [
        hit("https://mirror.example/panda", PANDA_COPY),  # a near copy of chunk-1
        hit("https://baike.example.cn/longjing-tea/?utm_source=feed", "another snippet of the tea page"),
        hit("https://quotes.example/panda", PANDA[:150]),  # an excerpt of chunk-1
        hit("https://other.example/dujiangyan", DUJIANGYAN),
    ]
    result = cross_source_dedup(local, web)
    assert [h.url for h in result.kept] == ["https://other.example/dujiangyan"]
    assert {(d.url, d.reason, d.duplicate_of) for d in result.dropped} == {
        ("https://mirror.example/panda", "local_near_duplicate", "chunk-1"),
        ("https://baike.example.cn/longjing-tea/?utm_source=feed", "local_url", "chunk-2"),
        ("https://quotes.example/panda", "local_near_duplicate", "chunk-1"),
    }
    assert (result.counts.web_in, result.counts.kept, result.counts.against_local) == (4, 1, 3)


def test_web_hits_are_deduplicated_among_themselves_the_better_ranked_one_kept():
    web = [
        hit("https://a.example/panda", PANDA),
        hit("https://A.example/panda/#comments", "the same page, another snippet"),  # same canonical URL
        hit("https://b.example/copy", " " + PANDA.replace("\n\n", "\n")),  # same text, other spacing
        hit("https://c.example/syndicated", PANDA_COPY),  # near duplicate
        hit("https://d.example/tea", TEA),
        hit("https://e.example/dujiangyan", HEADER + DUJIANGYAN + FOOTER),
        hit("https://f.example/tea-page", "short", raw=HEADER + TEA + FOOTER),  # the page read: contains TEA
    ]
    result = cross_source_dedup([], web)
    assert [h.url for h in result.kept] == [
        "https://a.example/panda",
        "https://d.example/tea",
        "https://e.example/dujiangyan",
        "https://f.example/tea-page",  # more than the earlier hit: the tea text plus the site's furniture
    ]
    counts = result.counts
    assert (counts.by_url, counts.by_hash, counts.by_near_duplicate, counts.against_local) == (1, 1, 1, 0)


def test_no_web_hits_and_no_local_evidence_are_fine():
    assert cross_source_dedup([], []).counts.kept == 0
    assert cross_source_dedup([LocalText("x", "some text")], [hit("https://a.example/", "")]).counts.kept == 1
