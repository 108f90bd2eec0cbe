"""jieba search-mode segmentation, lower-cased, with shipped zh + en stopwords."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from typing import Any

import jieba
import jieba.analyse
import jieba.posseg
import snowballstemmer

from backend.text.normalize import clean_query, normalize
from backend.text.script import script_forms

jieba.setLogLevel(logging.WARNING)
_init_lock = threading.Lock()
_initialised = False

_WORDLIKE = re.compile(r"\w", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_ASCII_WORD = re.compile(r"^[a-z]+$")


def _ensure_jieba() -> None:
    global _initialised
    if not _initialised:
        with _init_lock:
            if not _initialised:
                jieba.initialize()
                _initialised = True


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The shipped Chinese + English stopword list (backend/text/stopwords.txt), each Chinese word in
    simplified and traditional script (backend/text/script.py): a word listed in one script alone
    stayed a query term in the other (每个 dropped, 每個 kept)."""
    text = resources.files("backend.text").joinpath("stopwords.txt").read_text(encoding="utf-8")
    listed = (line.strip().lower() for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return frozenset(form for word in listed for form in script_forms(word))


def words(text: str) -> list[str]:
    """Search-mode tokens of normalised, lower-cased text; punctuation and spaces dropped (no stemming)."""
    _ensure_jieba()
    lowered = normalize(text).lower()
    return [t for t in jieba.cut_for_search(lowered) if _WORDLIKE.search(t) and not t.isspace()]


@lru_cache(maxsize=100_000)
def stem(token: str) -> str:
    """English Snowball stem of an ASCII word ("surrendered" -> "surrend"); anything else unchanged.

    The same algorithm as PostgreSQL's `english` configuration; Chinese needs none.
    """
    if len(token) <= 3 or not _ASCII_WORD.match(token):
        return token
    return str(_english_stemmer().stemWord(token))


_local = threading.local()


def _english_stemmer() -> Any:
    """This thread's stemmer: a Snowball stemmer keeps the word being stemmed in its own fields, so one
    shared between threads (web passages are segmented in worker threads, one per research section)
    mixes their words up (IndexError, or a wrong stem)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


def segment(text: str) -> list[str]:
    """The index's tokens: words() with English words stemmed, so "points" meets "point"."""
    return [stem(t) for t in words(text)]


def index_tokens(text: str) -> str:
    """The space-separated tokens stored in chunks.content_tokens (stopwords kept: positions matter)."""
    return " ".join(segment(text))


def query_terms(text: str) -> list[str]:
    """Significant query terms: segmented like the index, stopwords and 1-char Latin noise removed
    (before stemming: "was" is a stopword, its stem "wa" is not), de-duplicated in order.
    Single Chinese characters stay (人, 书 carry meaning)."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for token in words(clean_query(text)):
        if token in stop or (len(token) == 1 and not _CJK.match(token) and not token.isdigit()):
            continue
        seen.setdefault(stem(token), None)
    return list(seen)


def detect_lang(text: str) -> str:
    """'zh' when CJK characters dominate the letters, 'en' for Latin script, 'und' otherwise."""
    sample = text[:5000]
    cjk = len(_CJK.findall(sample))
    latin = len(_LATIN.findall(sample))
    if cjk == 0 and latin == 0:
        return "und"
    # One CJK character carries about as much as a 4-letter English word.
    return "zh" if cjk * 4 >= latin else "en"


class _PlainTokenizer:
    """jieba's TextRank over plain (HMM) segmentation instead of its POS tagger.

    jieba.posseg runs a POS-state Viterbi over every out-of-dictionary word: ~0.4 s per paragraph of
    Traditional Chinese (the dictionary is Simplified), against ~4 ms this way. Every word is offered
    as a noun; the stopword list does the filtering the POS tags did.
    """

    def cut(self, text: str) -> Iterator[jieba.posseg.pair]:
        return (jieba.posseg.pair(word, "n") for word in jieba.cut(text))


@lru_cache(maxsize=1)
def _textrank() -> jieba.analyse.TextRank:
    ranker = jieba.analyse.TextRank()
    ranker.tokenizer = ranker.postokenizer = _PlainTokenizer()
    ranker.stop_words = set(ranker.stop_words) | set(stopwords())
    return ranker


def keyphrases(text: str, top_k: int = 10) -> list[str]:
    """TextRank keyphrases (jieba.analyse), topped up with frequent terms for short or non-Chinese text."""
    if top_k <= 0:
        return []
    _ensure_jieba()
    normalized = normalize(text)
    phrases: list[str] = []
    for phrase in _textrank().textrank(normalized, topK=top_k * 2):
        lowered = phrase.lower()
        if lowered not in stopwords() and not lowered.isdigit() and lowered not in phrases:
            phrases.append(lowered)
    if len(phrases) < top_k:
        counts: dict[str, int] = {}
        for token in words(normalized):
            if token not in stopwords() and len(token) > 1 and not token.isdigit():
                counts[token] = counts.get(token, 0) + 1
        for token, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            if token not in phrases:
                phrases.append(token)
            if len(phrases) >= top_k:
                break
    return phrases[:top_k]
