"""The part of a long sentence worth quoting: the window where the answer most likely sits.

A factoid answer stands among or right next to the words the question shares with the sentence
("In 1943, a Supreme Court decision restored the prior patents of Tesla" for "When were Tesla's
patents restored?"). Every other word gets an answer likelihood that decays with its distance from
the matched terms (each term counted once, by its weight), doubled for a word of the asked-for kind
(a number for "how many"); the window keeps the most likelihood plus the most question weight that
fits in the limit.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping

from backend.text.segment import stem, stopwords

_CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CLASS}]")
ELLIPSIS = "…"
DECAY_CHARS = 30.0  # a word this far from a matched term is 1/e as likely to be the answer
COVER_FACTOR = 2.0  # what keeping a matched term is worth, relative to its weight as answer evidence
TYPED_FACTOR = 2.0  # a word of the asked-for kind is this much likelier to be the answer
# A Chinese character, or a run of other letters and digits (a Latin word, a number).
_TOKEN = re.compile(rf"[{_CJK_CLASS}]|[^\W_{_CJK_CLASS}]+")
_EDGE_PUNCT = re.compile(r"[\s，,；;：:、—–-]+$")
_LEADING_PUNCT = re.compile(r"^[\s，,；;：:、]+")

Occurrence = tuple[int, int, str]  # start, end, term


def quote_window(
    sentence: str,
    weights: Mapping[str, float],
    limit: int,
    is_typed: Callable[[str], bool] = lambda _word: False,
) -> str:
    """The sentence if it fits in limit characters, else its best window, with … where it was cut."""
    sentence = sentence.strip()
    if len(sentence) <= limit:
        return sentence
    limit -= 2 * len(ELLIPSIS)  # room to mark both cuts
    folded = _fold(sentence)
    occurrences = _occurrences(folded, weights)
    words = _words(folded)
    likelihood = _likelihood(sentence, folded, words, occurrences, weights, is_typed)
    best: tuple[float, int, int] | None = None
    starts, ends = _boundaries(sentence)
    for s in starts:
        e = max((x for x in ends if s < x <= s + limit), default=None)
        if e is None:
            continue
        value = sum(v for (a, b), v in zip(words, likelihood, strict=True) if s <= a and b <= e)
        value += COVER_FACTOR * sum(weights[t] for t in {t for a, b, t in occurrences if s <= a and b <= e})
        if best is None or value > best[0]:
            best = (value, s, e)
    if best is None:  # one unbroken word longer than the limit
        return sentence[: limit - 1] + ELLIPSIS
    _value, s, e = best
    text = sentence[s:e]
    if e < len(sentence):
        text = _EDGE_PUNCT.sub("", text) + ELLIPSIS
    if s > 0:
        text = ELLIPSIS + _LEADING_PUNCT.sub("", text)
    return text


def _likelihood(
    sentence: str,
    folded: str,
    words: list[tuple[int, int]],
    occurrences: list[Occurrence],
    weights: Mapping[str, float],
    is_typed: Callable[[str], bool],
) -> list[float]:
    """Per word: how likely it is part of the answer (0 for matched terms and stopwords)."""
    matched = {i for a, b, _t in occurrences for i in range(a, b)}
    stop = stopwords()
    by_term: dict[str, list[tuple[int, int]]] = {}
    for a, b, t in occurrences:
        by_term.setdefault(t, []).append((a, b))
    out = []
    for a, b in words:
        if a in matched or folded[a:b] in stop:
            out.append(0.0)
            continue
        value = 0.0
        for term, spans in by_term.items():
            distance = min(max(oa - b, a - ob, 0) for oa, ob in spans)
            value += weights[term] * math.exp(-distance / DECAY_CHARS)
        out.append(value * (TYPED_FACTOR if is_typed(sentence[a:b]) else 1.0))
    return out


def _fold(text: str) -> str:
    """Lower-cased, NFKC per character where that keeps one character: positions stay those of text."""
    out = []
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch).lower()
        out.append(folded if len(folded) == 1 else ch.lower())
    return "".join(out)


def _words(folded: str) -> list[tuple[int, int]]:
    """Latin words and numbers whole, Chinese characters one by one."""
    return [(m.start(), m.end()) for m in _TOKEN.finditer(folded)]


def _occurrences(folded: str, weights: Mapping[str, float]) -> list[Occurrence]:
    """Every place a weighted term occurs: Chinese terms as substrings, Latin ones as stemmed words."""
    found = []
    for term in weights:
        if _CJK.search(term):
            at = folded.find(term)
            while at >= 0:
                found.append((at, at + len(term), term))
                at = folded.find(term, at + 1)
    latin = {t for t in weights if not _CJK.search(t)}
    if latin:
        for m in _TOKEN.finditer(folded):
            word = stem(m.group())
            if word in latin:
                found.append((m.start(), m.end(), word))
    return found


def _boundaries(sentence: str) -> tuple[list[int], list[int]]:
    """Where a window may start and end: never inside a Latin word or number."""
    starts, ends = [], []
    for i, ch in enumerate(sentence):
        if ch.isspace():
            continue
        previous = sentence[i - 1] if i else " "
        following = sentence[i + 1] if i + 1 < len(sentence) else " "
        if not (_in_word(ch) and _in_word(previous)):
            starts.append(i)
        if not (_in_word(ch) and _in_word(following)):
            ends.append(i + 1)
    return starts, ends


def _in_word(ch: str) -> bool:
    return ch.isalnum() and not _CJK.match(ch)
