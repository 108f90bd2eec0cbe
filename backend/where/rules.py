"""Rule-based inference of a where clause from a question (the WhereBuilder's default, and its fallback).

Each rule finds one kind of scope in the question and says which words expressed it, so the builder
can drop those words from the text it searches with: time (backend.where.time_phrases), language
("英文资料", "documents in English"), media or file type ("PDF文件", "videos"), quality ("质量>=0.8",
"高质量", "quality at least 0.9") and tags (a known tag named in the question, or "#tag", "标签:x",
"关键词:x"). A rule only fires on wording that is about the documents, not about the answer: "用英文
回答" (answer in English) sets no language filter, "documents in English" does.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from backend.where.cues import document_cue
from backend.where.time_phrases import find_times


@dataclass(frozen=True)
class Inferred:
    """One inferred condition: {field: condition}, and the words of the question that expressed it."""

    field: str
    condition: dict[str, Any]
    phrase: str
    strip: list[tuple[int, int]] = dataclasses.field(
        default_factory=list
    )  # spans to remove from the search text


class Vocabulary:
    """The values the caller's documents hold per field (tags, lang, media_type, content_type), the
    most frequent first."""

    def __init__(self, values: Mapping[str, Sequence[str]] | None = None) -> None:
        self._ordered = {name: tuple(v) for name, v in (values or {}).items()}
        self._sets = {name: frozenset(v) for name, v in self._ordered.items()}

    def has(self, field_name: str, value: str) -> bool:
        return value in self._sets.get(field_name, frozenset())

    def of(self, field_name: str) -> frozenset[str]:
        return self._sets.get(field_name, frozenset())

    def ordered(self, field_name: str) -> tuple[str, ...]:
        return self._ordered.get(field_name, ())


_DOC_NOUNS_ZH = (
    r"资料|文档|文章|文献|内容|材料|来源|版本|原文|文本|网页|页面|报告|论文|文件|数据|新闻|结果|书籍|"
    r"PDF|pdf|邮件|纪要|笔记|通知|公告"
)
_DOC_NOUNS_EN = (
    r"documents?|docs|sources?|articles?|papers?|materials?|texts?|pages?|results?|content|reports?|files?|"
    r"pdfs?|e-?mails?|notes"
)
_LANGS_ZH = {"英文": "en", "英语": "en", "中文": "zh", "汉语": "zh", "简体中文": "zh", "繁体中文": "zh"}
_LANG_ZH = re.compile(
    rf"(?:只看|仅看|只要|仅限|限于|用)?(?P<lang>简体中文|繁体中文|英文|英语|中文|汉语)(?:写的|撰写的|版的|版)?的?"
    rf"(?=(?:{_DOC_NOUNS_ZH}))"
    rf"|(?:只看|仅看|只要|仅限|限于)(?P<lang2>简体中文|繁体中文|英文|英语|中文|汉语)(?:的)?"
)
_LANG_EN_ADJ = re.compile(
    rf"\b(?:only\s+)?(?P<lang>english|chinese)(?:-language)?(?=\s+(?:{_DOC_NOUNS_EN})\b)", re.IGNORECASE
)
_LANG_EN_IN = re.compile(
    r"\b(?:(?:written|published)\s+)?in\s+(?P<lang>english|chinese)(?P<only>\s+only)?\b", re.IGNORECASE
)
_EN_DOC_BEFORE = re.compile(rf"\b(?:{_DOC_NOUNS_EN})\s*$|\bonly\s*$", re.IGNORECASE)

# Media type words -> (field, value). A value is only used when the caller's documents hold it.
_MEDIA = [
    (re.compile(r"\bpdfs?\b(?:\s+(?:files?|docs?))?|PDF(?:文件|文档|格式的?|版)?(?:里|中)?的?", re.I),
     [("content_type", "application/pdf"), ("media_type", "pdf")]),
    (re.compile(r"(?:网页|HTML页面)(?:里|中)?的?|\b(?:web\s*pages?|html\s+(?:pages?|files))\b", re.I),
     [("content_type", "text/html")]),
    (re.compile(r"(?:Markdown|markdown|MD)(?:文件|文档)的?|\bmarkdown\s+(?:files?|documents?|docs)\b", re.I),
     [("content_type", "text/markdown")]),
    (re.compile(r"(?:TXT|txt|纯文本)(?:文件|文档)?(?:里|中)?的?|\b(?:txt|plain[-\s]text)\s+files?\b", re.I),
     [("content_type", "text/plain")]),
    (re.compile(r"(?:图片|图像|照片)(?:资料|文件)?(?:里|中)?的?|\b(?:images?|photos?|pictures?)\b", re.I),
     [("media_type", "image")]),
    (re.compile(r"(?:视频|影片)(?:资料|文件)?(?:里|中)?的?|\bvideos?\b", re.I), [("media_type", "video")]),
    (re.compile(r"(?:音频|录音)(?:资料|文件)?(?:里|中)?的?|\b(?:audio|recordings?)\b", re.I),
     [("media_type", "audio")]),
]  # fmt: skip

_NUMBER = r"(?P<x>\d+(?:\.\d+)?)\s*(?P<pct>%|分)?"
_QUALITY = re.compile(
    r"(?:质量分?|质量得分|quality(?:[\s_]score)?)\s*(?:(?:is|of|score)\s+)?"
    rf"(?P<op>>=|≥|>|大于等于|不低于|至少|不少于|大于|高于|超过|at\s+least|above|over|greater\s+than|more\s+than|≥)\s*{_NUMBER}",
    re.IGNORECASE,
)
_HIGH_QUALITY = re.compile(r"高质量的?|优质的?|\bhigh[-\s]quality\b", re.IGNORECASE)
_STRICT = (">", "大于", "高于", "超过", "above", "over", "greater than", "more than")
_EXPLICIT_TAG = re.compile(
    r"(?:(?<![\w#])#(?P<hash>[^\s#,，。；;!?！？]+)"
    r"|(?:标签|tag)\s*[:：=为是]\s*(?P<tag>[^\s,，。；;!?！？]+)"
    r"|(?:关键词|关键字|keyphrase|keyword)\s*[:：=为是]\s*(?P<kp>[^\s,，。；;!?！？]+))",
    re.IGNORECASE,
)


def infer_rules(
    question: str, now: datetime, vocabulary: Vocabulary, *, high_quality_min: float
) -> list[Inferred]:
    """Every condition the rules read in `question` (at most one per field)."""
    found: dict[str, Inferred] = {}
    for item in (
        _time(question, now),
        _language(question),
        *_media(question, vocabulary),
        _quality(question, high_quality_min),
        *_tags(question, vocabulary),
    ):
        if item is not None and item.field not in found:
            found[item.field] = item
    return list(found.values())


def _time(question: str, now: datetime) -> Inferred | None:
    """The longest time phrase that scopes the documents: a relative period, or one a cue ties to them."""
    match = next((t for t in find_times(question, now) if t.scope or document_cue(question, t.span)), None)
    if match is None:
        return None
    condition: dict[str, Any] = {}
    if match.start is not None:
        condition["$gte"] = match.start.isoformat()
    if match.end is not None:
        condition["$lt"] = match.end.isoformat()
    return Inferred(match.field, condition, match.phrase, [match.span])


def _language(question: str) -> Inferred | None:
    for m in _LANG_ZH.finditer(question):
        word = m["lang"] or m["lang2"]
        return Inferred("lang", {"$eq": _LANGS_ZH[word]}, m.group(0), [m.span()])
    for m in [*_LANG_EN_ADJ.finditer(question), *_LANG_EN_IN.finditer(question)]:
        about_documents = m.re is _LANG_EN_ADJ or m["only"] or _EN_DOC_BEFORE.search(question[: m.start()])
        if not about_documents:
            continue  # "summarise it in English" is about the answer, not the documents
        code = "en" if m["lang"].lower() == "english" else "zh"
        return Inferred("lang", {"$eq": code}, m.group(0), [m.span()])
    return None


def _media(question: str, vocabulary: Vocabulary) -> Iterable[Inferred]:
    for pattern, targets in _MEDIA:
        m = pattern.search(question)
        if m is None:
            continue
        for field_name, value in targets:
            if vocabulary.has(field_name, value):
                yield Inferred(field_name, {"$eq": value}, m.group(0), [m.span()])
                break


def _quality(question: str, high_quality_min: float) -> Inferred | None:
    m = _QUALITY.search(question)
    if m is not None:
        value = float(m["x"])
        if m["pct"] or value > 1:
            value /= 100  # 80% or 80分 -> 0.8
        if 0 <= value <= 1:
            op = "$gt" if " ".join(m["op"].lower().split()) in _STRICT else "$gte"
            return Inferred("quality_score", {op: round(value, 4)}, m.group(0), [m.span()])
    m = _HIGH_QUALITY.search(question)
    if m is not None:
        return Inferred("quality_score", {"$gte": high_quality_min}, m.group(0), [m.span()])
    return None


def _tags(question: str, vocabulary: Vocabulary) -> Iterable[Inferred]:
    """Explicit markup (#x, 标签:x, 关键词:x) first; else known tags named in the question."""
    tags: list[str] = []
    keyphrases: list[str] = []
    tag_spans: list[tuple[int, int]] = []
    keyphrase_spans: list[tuple[int, int]] = []
    for m in _EXPLICIT_TAG.finditer(question):
        group = "kp" if m["kp"] else "hash" if m["hash"] else "tag"
        (keyphrases if group == "kp" else tags).append(m[group])
        # The marker goes, the word stays: it is also what the question is about.
        (keyphrase_spans if group == "kp" else tag_spans).append((m.start(), m.start(group)))
    if tags:
        yield Inferred("tags", {"$contains": tags}, " ".join(f"#{t}" for t in tags), tag_spans)
    if keyphrases:
        yield Inferred("keyphrases", {"$contains": keyphrases}, " ".join(keyphrases), keyphrase_spans)
    if tags or keyphrases:
        return
    named = [tag for tag in sorted(vocabulary.of("tags")) if _names(question, tag)]
    # A tag inside a longer named tag ("发票" in "电子发票") is the same mention.
    named = [t for t in named if not any(t != other and t in other for other in named)]
    if len(named) == 1:
        yield Inferred("tags", {"$contains": named[0]}, named[0])
    elif named:
        yield Inferred("tags", {"$in": named}, " ".join(named))


def _names(question: str, tag: str) -> bool:
    """Whether the question names `tag`: as a word (Latin) or a substring of at least 2 characters (CJK)."""
    if len(tag) < 2:
        return False
    if tag.isascii():
        return re.search(rf"(?<![\w-]){re.escape(tag)}(?![\w-])", question, re.IGNORECASE) is not None
    return tag in question
