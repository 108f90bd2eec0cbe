"""An answer made of the sources' own best sentences, each cited: the generator when no LLM key is set."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from backend.llm.base import SourceText, Turn
from backend.text import detect_lang, normalize, query_terms, segment

# A sentence runs to Chinese 。！？ (plus closing quotes), to . ! ? followed by a space or the end
# (so "3.5" stays whole), or to the end of its line.
_SENTENCE = re.compile(r".+?(?:[。！？]+[\"'”’」』)）]*|[.!?]+[\"'”’)]*(?=\s|$)|$)")
_MARKDOWN_PREFIX = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)+")
_WORD = re.compile(r"\w", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

MAX_SENTENCES = 3
MAX_SENTENCE_CHARS = 320
MIN_SENTENCE_WORD_CHARS = 4  # below this a "sentence" is a heading or list debris
RANK_BONUS = 0.3  # what the top source gains over the last; less than one rare matching term
SAME_SOURCE_FACTOR = 0.7  # a second sentence from an already quoted source must be clearly better
RELATIVE_CUTOFF = 0.7  # extra sentences must come close to the best one
OTHER_LANGUAGE_FACTOR = 0.6  # a sentence in another language than the question is a weaker answer
CONTEXT_FACTOR = 0.5  # a term found only in the title/heading counts half: the sentence must carry the answer
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s")


@dataclass(frozen=True)
class _Sentence:
    source_n: int
    text: str
    score: float


class ExtractiveLLM:
    """Quotes the sentences that best match the question's terms, with [n] markers."""

    name = "extractive"
    generator = "extractive"

    def answer(
        self, question: str, sources: Sequence[SourceText], history: Sequence[Turn] = ()
    ) -> Iterator[str]:
        """Yield the chosen sentences, one delta each, each followed by its [n] marker."""
        previous = ""
        for sentence in _select_sentences(question, sources):
            # Chinese sentences run on; a space separates any pair involving another language.
            both_zh = detect_lang(previous) == detect_lang(sentence.text) == "zh"
            separator = " " if previous and not both_zh else ""
            yield f"{separator}{sentence.text}[{sentence.source_n}]"
            previous = sentence.text

    def complete(self, system: str, prompt: str) -> str | None:
        """Free-form generation is beyond an extractive model."""
        return None

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """So is structured output: callers use their heuristics."""
        return None


def _select_sentences(question: str, sources: Sequence[SourceText]) -> list[_Sentence]:
    """The 1-3 best evidence sentences, best first, preferring different sources; never empty."""
    if not sources:
        return []
    candidates = _score_sentences(question, sources)
    best = max((c.score for c in candidates), default=0.0)
    if best <= 0:
        return [_fallback(sources)]
    chosen: list[_Sentence] = []
    remaining = [c for c in candidates if c.score >= best * RELATIVE_CUTOFF]
    while remaining and len(chosen) < MAX_SENTENCES:
        used = {c.source_n for c in chosen}
        pick = max(remaining, key=lambda c: c.score * (SAME_SOURCE_FACTOR if c.source_n in used else 1.0))
        chosen.append(pick)
        remaining = [c for c in remaining if c is not pick and _key(c.text) != _key(pick.text)]
    return chosen


def _score_sentences(question: str, sources: Sequence[SourceText]) -> list[_Sentence]:
    terms = query_terms(question)
    if not terms or not sources:
        return []
    contexts = [_Text(f"{s.title} {s.heading}") for s in sources]
    documents = [_Text(f"{s.title} {s.heading} {s.content}") for s in sources]
    weights = {}
    for term in terms:
        df = sum(doc.has(term) for doc in documents)
        if df:
            weights[term] = math.log(1 + len(sources) / df)  # rarer across the sources: worth more
    question_lang = detect_lang(question)
    scored = []
    for rank, (source, context) in enumerate(zip(sources, contexts, strict=True)):
        bonus = RANK_BONUS * (1 - rank / len(sources))
        for index, text in enumerate(split_sentences(source.content)):
            sentence = _Text(text)
            # A sentence with no query term of its own is eligible only as the first one under a
            # heading that matches (the answer right below an FAQ question).
            if not any(sentence.has(term) for term in weights) and (index > 0 or not source.heading):
                continue
            # A sentence is read under its title: "The team was founded in 1993" answers
            # "Who founded the Panthers?" in a source titled "Carolina Panthers".
            overlap = sum(
                w if sentence.has(term) else w * CONTEXT_FACTOR
                for term, w in weights.items()
                if sentence.has(term) or context.has(term)
            )
            if detect_lang(text) != question_lang:
                overlap *= OTHER_LANGUAGE_FACTOR
            scored.append(_Sentence(source.n, _shorten(text), overlap + bonus))
    return scored


def split_sentences(content: str) -> list[str]:
    """Sentences of a passage with markdown list/heading markers removed; debris dropped."""
    sentences = []
    for line in content.splitlines():
        if _HEADING_LINE.match(line):
            continue  # a heading names a section; it is not evidence
        for match in _SENTENCE.finditer(_MARKDOWN_PREFIX.sub("", line)):
            text = match.group().strip()
            if len(_WORD.findall(text)) >= MIN_SENTENCE_WORD_CHARS:
                sentences.append(text)
    return sentences


class _Text:
    """Text prepared for term matching."""

    def __init__(self, text: str) -> None:
        self.lowered = normalize(text).lower()
        self.tokens = set(segment(self.lowered))

    def has(self, term: str) -> bool:
        # Chinese terms match as substrings (jieba may cut the same word differently in context);
        # Latin terms match whole tokens so "art" does not match "start".
        return term in self.lowered if _CJK.search(term) else term in self.tokens


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_SENTENCE_CHARS else text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


def _key(text: str) -> str:
    return "".join(_WORD.findall(text.lower()))


def _fallback(sources: Sequence[SourceText]) -> _Sentence:
    """Nothing matched: the first sentence of the top source, so the answer is never empty."""
    top = sources[0]
    sentences = split_sentences(top.content) or [top.content.strip() or top.title.strip() or top.heading]
    return _Sentence(top.n, _shorten(sentences[0]), 0.0)
