"""Sentences of a passage, as the extractive generator quotes them (Chinese and English)."""

from __future__ import annotations

import re

# A sentence ends at Chinese 。！？ (plus closing quotes), at . ! ? followed by a space or the end (so
# "3.5" stays whole), or at the end of its line. Candidates are then checked for abbreviations.
_SENTENCE_END = re.compile(r"[。！？]+[\"'”’」』)）]*|[.!?]+[\"'”’)]*(?=\s|$)")
_MARKDOWN_PREFIX = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)+")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s")
_WORD = re.compile(r"\w", re.UNICODE)
# The word before a '.' that does not end a sentence: an initial ("M. Theo Kearney"), a dotted
# abbreviation ("U.S.", "e.g."), or a title/short form that is always followed by more.
_INITIAL = re.compile(r"(?:^|[\s(])[A-Z]\.$")
_DOTTED = re.compile(r"(?:^|[\s(])(?:[A-Za-z]\.)+[A-Za-z]\.$")
# After "U.S." a new sentence is told by a word that starts sentences, not names.
_SENTENCE_STARTERS = frozenset(
    "the a an it in on at as by for he she they we this these that there his her its their however "
    "since when while although but after before during from with".split()
)
_NEXT_WORD = re.compile(r"\s*([A-Za-z]+)")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st mt jr sr gen col lt sgt rev gov sen rep capt cmdr fig no vol pp ca approx vs"
    "".split()
)
_LAST_WORD = re.compile(r"([A-Za-z]+)\.$")
_NEXT_STARTS_LOWER = re.compile(r"\s*[a-z0-9]")

MIN_SENTENCE_WORD_CHARS = 4  # below this a "sentence" is a heading or list debris


def split_sentences(content: str) -> list[str]:
    """Sentences of a passage with markdown list/heading markers removed; debris dropped."""
    sentences = []
    for line in content.splitlines():
        if _HEADING_LINE.match(line):
            continue  # a heading names a section; it is not evidence
        for text in _line_sentences(_MARKDOWN_PREFIX.sub("", line)):
            if len(_WORD.findall(text)) >= MIN_SENTENCE_WORD_CHARS:
                sentences.append(text)
    return sentences


def _line_sentences(line: str) -> list[str]:
    out = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        end = match.end()
        if match.group().startswith(".") and _is_abbreviation(line[start:end], line[end:]):
            continue
        if line[start:end].strip():
            out.append(line[start:end].strip())
        start = end
    if line[start:].strip():
        out.append(line[start:].strip())
    return out


def _is_abbreviation(before: str, after: str) -> bool:
    """A '.' that belongs to an abbreviation or initial, or is followed by a lower-case word."""
    if _NEXT_STARTS_LOWER.match(after):
        return True  # "the U.S. city", "approx. 5 kW": a sentence does not start in lower case
    if _INITIAL.search(before):
        return True
    if _DOTTED.search(before):
        following = _NEXT_WORD.match(after)
        return not (following and following.group(1).lower() in _SENTENCE_STARTERS)
    last = _LAST_WORD.search(before)
    return bool(last and last.group(1).lower() in _ABBREVIATIONS)
