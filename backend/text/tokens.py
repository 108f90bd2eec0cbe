"""A tokenizer-free token estimate for context budgets (no model download, close enough to budget)."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z0-9]+")


def estimate_tokens(text: str) -> int:
    """~1 token per CJK character, ~1.3 per Latin word, 1 per other symbol: an upper-leaning estimate
    for Gemini/SentencePiece-style tokenizers."""
    cjk = len(_CJK.findall(text))
    words = _WORD.findall(text)
    rest = len(_WORD.sub("", _CJK.sub("", text)).replace(" ", "").replace("\n", ""))
    return cjk + int(len(words) * 1.3 + 0.999) + rest


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of text (cut at a sentence end when possible) within the budget."""
    if estimate_tokens(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    ends = [cut.rfind(p) for p in "。！？.!?\n"]
    best = max(ends)
    return cut[: best + 1] if best > lo * 0.5 else cut
