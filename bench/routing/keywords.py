"""Search-box versions of a question: its content words only, as a user types them into a search box.

Rule (documented in docs/routing.md, "Questions real people ask — before"):
- words: jieba's precise segmentation of the NFKC-normalised question (English words are jieba tokens
  too), punctuation dropped; a word is a content word when its lower case is not in the product's
  stopword list (backend/text/stopwords.txt, which holds the question words 什么 / 哪 / 谁 / 多少 /
  what / when / who ...), it does not start with a Chinese question word (哪座, 哪国, 几个, 多少次)
  nor hold 什么 (干什么), and it is not a single Latin letter;
- single Chinese characters (座, 年, 了) are dropped when at least two longer content words remain;
- at most MAX_ZH words for a Chinese question (jieba words are long units) and MAX_EN for an English
  one; when there are more, the heaviest are kept, in their order in the question. Weight: jieba's idf
  table for Chinese words (unknown words, mostly names, get its median idf), and for Latin words
  the median idf + length / 10, + 1 for a capitalised word (a name), + 1 for a number (so
  1964 or NFL in a Chinese question counts like a rare word);
- a question left with fewer than MIN_WORDS content words has no keyword version (the variant leaves it
  out and counts it).
"""

from __future__ import annotations

import re
from functools import lru_cache

import jieba
import jieba.analyse

from backend.text import detect_lang, normalize
from backend.text.segment import stopwords

MIN_WORDS = 2
MAX_ZH = 3
MAX_EN = 4

_WORDLIKE = re.compile(r"\w")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_LETTER = re.compile(r"^[A-Za-z]$")
_ZH_QUESTION_WORD = re.compile(r"^(?:哪|几|幾|多少|怎)|什么|什麼|甚麼")


@lru_cache(maxsize=1)
def _idf() -> tuple[dict[str, float], float]:
    table = jieba.analyse.TFIDF()
    return table.idf_freq, table.median_idf


def content_words(question: str) -> list[str]:
    """The question's content words in order (duplicates removed), single CJK characters included."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for token in jieba.cut(normalize(question)):
        token = token.strip()
        if not token or not _WORDLIKE.search(token) or token.lower() in stop:
            continue
        if _LATIN_LETTER.match(token) or _ZH_QUESTION_WORD.search(token) or token.replace("_", "") == "":
            continue
        seen.setdefault(token, None)
    return list(seen)


def weight(word: str) -> float:
    """How much a word says: jieba's idf for Chinese, length / name / number for the rest."""
    table, median = _idf()
    if _CJK.search(word):
        return table.get(word, median)
    score = median + len(word) / 10
    if word[:1].isupper():
        score += 1
    if any(ch.isdigit() for ch in word):
        score += 1
    return score


def keyword_query(question: str) -> str | None:
    """The search-box version of `question` (content words joined by spaces), or None when it has fewer
    than MIN_WORDS content words."""
    words = content_words(question)
    longer = [w for w in words if not (len(w) == 1 and _CJK.match(w))]
    if len(longer) >= MIN_WORDS:
        words = longer
    if len(words) < MIN_WORDS:
        return None
    limit = MAX_ZH if detect_lang(question) == "zh" else MAX_EN
    if len(words) > limit:
        keep = set(sorted(range(len(words)), key=lambda i: (-weight(words[i]), i))[:limit])
        words = [w for i, w in enumerate(words) if i in keep]
    return " ".join(words)
