"""An answer made of the sources' own words, each piece cited: the generator when no LLM key is set.

Every sentence of every source competes on the question's terms (backend/llm/ranking.py). When one
sentence clearly beats the rest, it is the answer, cut to the window around its matches when long
(backend/llm/spans.py): a short answer a reader takes in at a glance. When several compete, the answer
quotes up to three of them, best first, so the right one is among them; each carries its [n] marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from backend.llm.base import Sampling, SourceText, Turn
from backend.llm.prompts import load_prompt
from backend.llm.question_types import offers
from backend.llm.ranking import Ranked, rank_sentences
from backend.llm.sentences import split_sentences
from backend.llm.spans import ELLIPSIS, quote_window
from backend.text import detect_lang

__all__ = ["ExtractiveLLM", "split_sentences"]

CLEAR_MARGIN = 0.3  # the best sentence answers alone when the runner-up scores this share lower
SHORT_CHARS = 145  # a lone answer sentence is cut to this length: within 150 characters with its [n]
MAX_PIECES = 3  # sentences quoted when several compete
RELATIVE_CUTOFF = 0.5  # ... each scoring at least this share of the best one
MAX_SENTENCE_CHARS = 250  # a competing sentence is cut to this length
SAME_SOURCE_FACTOR = 0.9  # a second sentence from an already quoted source must be a little better
_LANGUAGES = ("zh", "en")
_TRAILING_PUNCT = re.compile(r"[\s，,；;：:、—–-]+$")


@dataclass(frozen=True)
class _Piece:
    source_n: int
    text: str


class ExtractiveLLM:
    """Quotes the sentences (or the part of one) that best match the question, with [n] markers."""

    name = "extractive"
    generator = "extractive"

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        """Yield the chosen pieces, one delta each, each followed by its [n] marker (it samples nothing:
        `sampling` does not apply)."""
        pieces = _select_pieces(question, sources)
        note = _language_note(question, pieces)
        previous = ""
        if note:
            yield note
            previous = note
        for piece in pieces:
            # Chinese sentences run on; a space separates any pair involving another language.
            both_zh = detect_lang(previous) == detect_lang(piece.text) == "zh"
            separator = " " if previous and not both_zh and not previous.endswith("：") else ""
            yield f"{separator}{piece.text}[{piece.source_n}]"
            previous = piece.text

    def complete(self, system: str, prompt: str) -> str | None:
        """Free-form generation is beyond an extractive model."""
        return None

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """So is structured output: callers use their heuristics."""
        return None


def _language_note(question: str, pieces: Sequence[_Piece]) -> str | None:
    """A quote cannot be translated: say that what follows is in the other language (issue 26 item 1,
    "an answer that says which language its source is in"), in the question's language."""
    asked = detect_lang(question)
    if asked not in _LANGUAGES or not pieces:
        return None
    other = sum(1 for lang in (detect_lang(p.text) for p in pieces) if lang in _LANGUAGES and lang != asked)
    if not other:
        return None
    some = "" if other == len(pieces) else "some_"
    return load_prompt(f"quoted_{some}other_language_{asked}").render().strip()


def _select_pieces(question: str, sources: Sequence[SourceText]) -> list[_Piece]:
    """One clear answer, or up to MAX_PIECES competing ones, best first; never empty."""
    if not sources:
        return []
    ranked = rank_sentences(question, sources)
    if not ranked or ranked[0].score <= 0:
        return [_fallback(sources)]
    best = ranked[0]
    runner_up = ranked[1].score if len(ranked) > 1 else 0.0
    if (best.score - runner_up) / best.score >= CLEAR_MARGIN:
        return [_piece(best, SHORT_CHARS)]
    chosen = [best]
    remaining = [r for r in ranked[1:] if r.score >= best.score * RELATIVE_CUTOFF]
    while remaining and len(chosen) < MAX_PIECES:
        quoted = {c.source.n for c in chosen}
        pick = max(remaining, key=lambda r: r.score * (SAME_SOURCE_FACTOR if r.source.n in quoted else 1.0))
        chosen.append(pick)
        remaining.remove(pick)
    return [_piece(r, MAX_SENTENCE_CHARS) for r in chosen]


def _piece(ranked: Ranked, limit: int) -> _Piece:
    q = ranked.question
    text = quote_window(ranked.text, q.weights, limit, lambda word: offers(word, q.kind, q.text))
    return _Piece(ranked.source.n, text)


def _fallback(sources: Sequence[SourceText]) -> _Piece:
    """Nothing matched: the first sentence of the top source, so the answer is never empty."""
    top = sources[0]
    sentences = split_sentences(top.content) or [top.content.strip() or top.title.strip() or top.heading]
    text = sentences[0]
    if len(text) > SHORT_CHARS:
        text = _TRAILING_PUNCT.sub("", text[: SHORT_CHARS - 1]) + ELLIPSIS
    return _Piece(top.n, text)
