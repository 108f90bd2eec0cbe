"""Reading what a model wrote: markdown, preambles, labels and code fences removed before matching.

Seed multi-agent-research.md (第十次修改) lists the failure this prevents: a model wraps its answer in
`**...**`, numbers it, puts "以下是查询：" or "Here are the queries:" in front or fences it in ```, and
a parser that matches the raw text turns that decoration into a search query or misses the answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from backend.text.hygiene import drop_unstorable, scrub

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# Leading markdown: headings, quotes, bullets, numbering ("1.", "1)", "(1)", "一、", "①").
_LEADING = re.compile(
    r"^\s*(?:#{1,6}\s+|>\s*|[-*+•·]\s+|\(?\d{1,2}(?:\.(?!\d)|[)、:：])\s*|[一二三四五六七八九十]+、\s*|[①-⑩]\s*)+"
)
_EMPHASIS = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)|`")
_LABEL = re.compile(
    r"^[^:：\n]{0,40}?(?:\b(?:query|queries|question|rewrite|rewritten|search)\b|查询|检索|搜索|改写|问题)"
    r"[^:：\n]{0,12}[:：]\s*",
    re.IGNORECASE,
)
_CHATTER = re.compile(
    r"^(?:sure|okay|ok|certainly|of course|here (?:is|are)\b.*|好的|当然|没问题|以下是.*|下面是.*)\W*$",
    re.IGNORECASE,
)
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "《": "》"}


def clean_line(line: str) -> str:
    """One line without markdown decoration, a leading label ("查询1：", "Query:") or wrapping quotes."""
    text = _EMPHASIS.sub("", _LEADING.sub("", line)).strip()
    text = _LABEL.sub("", text).strip()
    return unquote(text)


def unquote(text: str) -> str:
    while len(text) >= 2 and _QUOTE_PAIRS.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def is_preamble(raw: str, cleaned: str) -> bool:
    """A line that introduces or comments instead of carrying content ("以下是查询：", "Sure!")."""
    stripped = raw.strip()
    if not cleaned or _CHATTER.match(cleaned) or _CHATTER.match(stripped):
        return True
    # "Here are three queries:", "补充检索如下：": an introduction ends with a colon, nothing after it.
    return stripped.endswith((":", "：")) and not _LABEL.sub("", _EMPHASIS.sub("", stripped)).rstrip(":：")


def content_lines(text: str) -> list[str]:
    """The content lines of a completion, cleaned, in order (fences, blank lines and preambles dropped)."""
    out: list[str] = []
    # A NUL or a lone surrogate (a source can ask for one) would fail wherever the line is stored.
    for raw in drop_unstorable(text).splitlines():
        if _FENCE.match(raw):
            continue
        cleaned = clean_line(raw)
        if not is_preamble(raw, cleaned):
            out.append(cleaned)
    return out


def parse_json(text: str) -> Any:
    """The first JSON object or array in a completion (code fences and prose around it ignored).

    Raises ValueError when there is none: callers fall back to a heuristic, never crash.
    """
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        return scrub(value)
    raise ValueError("no JSON object or array in the model's output")
