"""Which sentence of the sources answers the question: lexical evidence, weighted within the sources.

A term weighs by how few of the sources' sentences contain it, a sentence counting as containing the
terms of its source's title (the topic of a passage does not tell its sentences apart: in an article
titled 蓝线裸顶鲷 the answer to 蓝线裸顶鲷以什么为食 is the sentence with 为食). A sentence scores the
share of the question's weight it holds, read under its title, plus smaller shares for the question's
Chinese characters it holds (robust to segmentation, e.g. of Traditional Chinese), for consecutive
question terms standing together, for offering the asked-for kind of answer, for a well-ranked source
and for a source that covers the question as a whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from backend.llm.base import SourceText
from backend.llm.question_types import AnswerType, answer_type, offers
from backend.llm.sentences import split_sentences
from backend.text import detect_lang, normalize, query_terms, segment

CONTEXT_FACTOR = 0.75  # a term found only in the title/heading counts this much
CHAR_FACTOR = 0.3  # weight of the share of the question's Chinese characters a sentence holds
PHRASE_FACTOR = 0.3  # weight of the share of consecutive question terms standing together
TYPE_BONUS = 0.15  # a sentence offering the asked-for kind of answer (a number for 多少)
RANK_BONUS = 0.3  # what the top source's sentences gain over the last source's
SOURCE_FACTOR = 0.3  # weight of the share of the question its whole source covers
OTHER_LANGUAGE_FACTOR = 0.6  # a sentence in another language than the question is a weaker answer
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"\w", re.UNICODE)


class _Text:
    """Text prepared for term matching."""

    def __init__(self, text: str) -> None:
        self.lowered = normalize(text).lower()
        self.sequence = segment(self.lowered)
        self.tokens = set(self.sequence)

    def has(self, term: str) -> bool:
        # Chinese terms match as substrings (jieba may cut the same word differently in context);
        # Latin terms match whole tokens so "art" does not match "start".
        return term in self.lowered if _CJK.search(term) else term in self.tokens

    def adjacent(self, first: str, second: str) -> bool:
        """Whether second follows first (at most one token between)."""
        if _CJK.search(first) and _CJK.search(second):
            return first + second in self.lowered
        at = [i for i, t in enumerate(self.sequence) if t == first]
        return any(second in self.sequence[i + 1 : i + 3] for i in at)


@dataclass
class Question:
    """The question as the sources weigh it."""

    text: str
    lang: str
    kind: AnswerType
    weights: dict[str, float]  # term -> weight; only terms the sources contain
    chars: dict[str, float]  # Chinese character of the terms -> weight
    order: list[str]  # the terms in question order
    parts: dict[str, list[str]] = field(init=False)  # term -> the shorter terms inside it
    heads: dict[str, float] = field(init=False)  # the terms inside no other term, with their weights

    def __post_init__(self) -> None:
        # jieba's search mode yields a long word and the words inside it (世界纪录, 世界, 纪录): the long
        # word is the term, the inner ones only give it partial credit, so no word counts twice.
        self.parts = {
            t: [s for s in self.weights if s != t and _CJK.search(s) and s in t] for t in self.weights
        }
        inner = {s for parts in self.parts.values() for s in parts}
        self.heads = {t: w for t, w in self.weights.items() if t not in inner}

    @property
    def total(self) -> float:
        return sum(self.heads.values()) or 1.0

    def _credit(self, text: _Text, term: str) -> float:
        """1 when text holds the term, else the largest share of it an inner word covers."""
        if text.has(term):
            return 1.0
        w = self.weights[term]
        return max(
            (len(s) / len(term) * min(1.0, self.weights[s] / w) for s in self.parts[term] if text.has(s)),
            default=0.0,
        )

    def matched(self, text: _Text) -> float:
        return sum(w for term, w in self.weights.items() if text.has(term))

    def term_share(self, text: _Text, context: _Text) -> float:
        """The question's weight a sentence holds, a term only in its title counting CONTEXT_FACTOR."""
        found = sum(
            w * max(self._credit(text, t), CONTEXT_FACTOR * self._credit(context, t))
            for t, w in self.heads.items()
        )
        return found / self.total

    def phrase_share(self, text: _Text, context: _Text) -> float:
        """The weight of consecutive question terms that stand together, as a share."""
        terms = [t for t in self.order if t in self.weights]
        found = 0.0
        for first, second in zip(terms, terms[1:], strict=False):
            w = (self.weights[first] + self.weights[second]) / 2
            if text.adjacent(first, second):
                found += w
            elif context.adjacent(first, second):
                found += w * CONTEXT_FACTOR
        return found / self.total

    def char_share(self, text: _Text, context: _Text) -> float:
        """The weight of the question's Chinese characters a sentence (or its title) holds, as a share."""
        total = sum(self.chars.values())
        found = sum(
            w if ch in text.lowered else w * CONTEXT_FACTOR if ch in context.lowered else 0.0
            for ch, w in self.chars.items()
        )
        return found / total if total else 0.0


@dataclass(frozen=True)
class Ranked:
    """A candidate sentence and its score."""

    score: float
    text: str
    source: SourceText
    question: Question


@dataclass(frozen=True)
class _Candidate:
    rank: int  # of its source
    source: SourceText
    index: int  # of the sentence in its source
    text: str
    prepared: _Text


def rank_sentences(question: str, sources: Sequence[SourceText]) -> list[Ranked]:
    """Every sentence holding a question term, best first; a sentence repeated (chunk overlap) once."""
    terms = query_terms(question)
    if not terms:
        return []
    candidates = [
        _Candidate(rank, source, index, text, _Text(text))
        for rank, source in enumerate(sources)
        for index, text in enumerate(split_sentences(source.content))
    ]
    contexts = [_Text(f"{s.title} {s.heading}".replace("_", " ")) for s in sources]  # file-name titles
    q = Question(
        question,
        detect_lang(question),
        answer_type(question),
        _term_weights(terms, candidates, contexts),
        _char_weights(terms, candidates),
        list(terms),
    )
    if not q.weights:
        return []
    relevance = _source_relevance(terms, candidates, contexts)
    ranked: dict[str, Ranked] = {}
    for c in candidates:
        score = _score(c, q, contexts[c.rank], len(sources))
        if score is None:
            continue
        score += SOURCE_FACTOR * relevance[c.rank]
        key = "".join(_WORD.findall(c.text.lower()))
        if key not in ranked or ranked[key].score < score:
            ranked[key] = Ranked(score, c.text, c.source, q)
    return sorted(ranked.values(), key=lambda r: -r.score)


def _term_weights(
    terms: Sequence[str], candidates: Sequence[_Candidate], contexts: Sequence[_Text]
) -> dict[str, float]:
    """Inverse sentence frequency of each term, a sentence containing the terms of its title."""
    n = len(candidates)
    weights = {}
    for term in terms:
        df = sum(c.prepared.has(term) or contexts[c.rank].has(term) for c in candidates)
        if df:
            weights[term] = math.log(1 + n / df)
    return weights


def _char_weights(terms: Sequence[str], candidates: Sequence[_Candidate]) -> dict[str, float]:
    """Inverse sentence frequency of each Chinese character of the terms."""
    n = len(candidates)
    weights = {}
    for ch in {ch for t in terms for ch in t if _CJK.match(ch)}:
        df = sum(ch in c.prepared.lowered for c in candidates)
        if df:
            weights[ch] = math.log(1 + n / df)
    return weights


def _source_relevance(
    terms: Sequence[str], candidates: Sequence[_Candidate], contexts: Sequence[_Text]
) -> list[float]:
    """The share of the question's weight each whole source holds (terms weighted by source rarity)."""
    holds = [{t for t in terms if ctx.has(t)} for ctx in contexts]
    for c in candidates:
        holds[c.rank].update(t for t in terms if c.prepared.has(t))
    weights = {}
    for term in terms:
        df = sum(term in h for h in holds)
        if df:
            weights[term] = math.log(1 + len(holds) / df)
    total = sum(weights.values()) or 1.0
    return [sum(w for t, w in weights.items() if t in h) / total for h in holds]


def _score(c: _Candidate, q: Question, context: _Text, n_sources: int) -> float | None:
    """A sentence's score, or None when it holds no question term of its own."""
    # Exception: the first sentence under a matching heading (the answer right below an FAQ question).
    if q.matched(c.prepared) <= 0 and (c.index > 0 or not c.source.heading):
        return None
    # A sentence is read under its title: "The team was founded in 1993" answers "Who founded the
    # Panthers?" in a source titled "Carolina Panthers".
    score = q.term_share(c.prepared, context)
    score += CHAR_FACTOR * q.char_share(c.prepared, context)
    score += PHRASE_FACTOR * q.phrase_share(c.prepared, context)
    if offers(c.text, q.kind, q.text):
        score += TYPE_BONUS
    if detect_lang(c.text) != q.lang:
        score *= OTHER_LANGUAGE_FACTOR
    return score + RANK_BONUS * (1 - c.rank / n_sources)
