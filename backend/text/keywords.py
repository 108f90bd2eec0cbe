"""A question's search-box form: its content words only (the chat's second chance,
backend/chat/second_chance.py).

Rule: jieba's precise segmentation of the normalised question, with identifiers (rrf_k, db.pool_size,
v2) kept whole instead of cut at their punctuation; a word is a content word when its lower case is not
in the product's stopwords (which hold 什么 / 谁 / 多少 / what / who ...), it does not start with a
Chinese question word (哪座, 几条, 多少次) nor hold 什么 (干什么), and it is not a single Latin letter.
Runs of single Chinese characters are joined (jieba cuts a word it does not know, 鎌倉, into
characters); a lone one (调, 写) is dropped when a longer content word remains: alone it matches
everything. At most MAX_WORDS words, the heaviest kept in the question's order (jieba's idf for
Chinese, a name's or number's extra weight for Latin words): more than the benchmark's search-box
variant (bench/routing/keywords.py, 3-4 words), since every qualifier dropped lets a near-topic
passage through (measured: docs/routing.md, "Second chance"); identifiers stay whole, one word is enough.
"""

from __future__ import annotations

import re
from functools import lru_cache

import jieba
import jieba.analyse

from backend.text.normalize import normalize
from backend.text.segment import stopwords

MAX_WORDS = 8

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_.\-][A-Za-z0-9]+)+")
_WORDLIKE = re.compile(r"\w")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_LETTER = re.compile(r"^[A-Za-z]$")
# Question words the stopword list lacks, colloquial ones (啥, 咋, 干嘛) and how-much forms (多大, 多久)
# included: kept, they are terms no passage holds, and every passage misses them alike.
_ZH_QUESTION_WORD = re.compile(
    r"^(?:哪|几|幾|多少|怎|咋|啥|为啥|為啥|为何|為何|干嘛|幹嘛|多大|多久|多长|多長|多高|多远|多遠|多重|多快)"
    r"|什么|什麼|甚麼|啥"
)


@lru_cache(maxsize=1)
def _idf() -> tuple[dict[str, float], float]:
    table = jieba.analyse.TFIDF()
    return table.idf_freq, table.median_idf


def _tokens(text: str) -> list[str]:
    """jieba's words, identifiers whole."""
    out: list[str] = []
    start = 0
    for match in _IDENTIFIER.finditer(text):
        out.extend(jieba.cut(text[start : match.start()]))
        out.append(match.group())
        start = match.end()
    out.extend(jieba.cut(text[start:]))
    return out


def content_words(question: str) -> list[str]:
    """The question's content words in order, duplicates removed."""
    stop = stopwords()
    kept: list[str] = []
    for token in _joined_characters(_tokens(normalize(question))):
        token = token.strip()
        if not token or not _WORDLIKE.search(token) or token.lower() in stop:
            continue
        if _LATIN_LETTER.match(token) or _ZH_QUESTION_WORD.search(token) or not token.strip("_"):
            continue
        kept.append(token)
    words = list(dict.fromkeys(kept))
    longer = [w for w in words if not (len(w) == 1 and _CJK.match(w))]
    return longer or words


def _joined_characters(tokens: list[str]) -> list[str]:
    """Runs of single Chinese characters joined: jieba cuts a word it does not know (鎌倉, a name in
    traditional script) into characters, which alone match everything; a lone one (调, 写) stays alone."""
    out: list[str] = []
    run = ""
    for token in tokens:
        if len(token) == 1 and _CJK.match(token) and token not in stopwords():
            run += token
            continue
        if run:
            out.append(run)
            run = ""
        out.append(token)
    if run:
        out.append(run)
    return out


def _weight(word: str) -> float:
    table, median = _idf()
    if _CJK.search(word):
        return float(table.get(word, median))
    score = median + len(word) / 10
    if word[:1].isupper():
        score += 1
    if any(ch.isdigit() or ch in "_." for ch in word):
        score += 1
    return float(score)


def keyword_query(question: str, *, max_words: int = MAX_WORDS) -> str | None:
    """The question's content words joined by spaces (at most max_words, the heaviest, in order), or
    None when it has none."""
    words = content_words(question)
    if not words:
        return None
    if len(words) > max_words:
        keep = set(sorted(range(len(words)), key=lambda i: (-_weight(words[i]), i))[:max_words])
        words = [w for i, w in enumerate(words) if i in keep]
    return " ".join(words)
