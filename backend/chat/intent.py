"""What kind of turn a message is before anything is searched: small talk, an instruction about the
previous answer, or a question.

Conservative by construction: a message is conversational only when phrases of backend/chat/phrases.py
(and fillers such as 啊 / please) cover every word of it, so any content word makes it a question —
「你好，HNSW 是什么？」 is searched. `python -m bench.conversation` counts the development sets' questions
this would misread (none, docs/routing.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

from backend.chat import phrases
from backend.text import detect_lang

SmallTalk = Literal["greeting", "thanks", "goodbye", "identity", "capabilities"]
Instruction = Literal["expand", "shorter", "to_english", "to_chinese", "translate"]
Lang = Literal["zh", "en"]

_SMALL_TALK: dict[SmallTalk, tuple[str, ...]] = {
    "greeting": phrases.GREETING,
    "thanks": phrases.THANKS,
    "goodbye": phrases.GOODBYE,
    "identity": phrases.IDENTITY,
    "capabilities": phrases.CAPABILITIES,
}
_INSTRUCTIONS: dict[Instruction, tuple[str, ...]] = {
    "expand": phrases.EXPAND,
    "shorter": phrases.SHORTER,
    "to_english": phrases.TO_ENGLISH,
    "to_chinese": phrases.TO_CHINESE,
    "translate": phrases.TRANSLATE,
}
# When a message holds several ("hello, what can you do?"), the reply answers the most informative.
_SMALL_TALK_ORDER: tuple[SmallTalk, ...] = ("capabilities", "identity", "thanks", "goodbye", "greeting")
_INSTRUCTION_ORDER: tuple[Instruction, ...] = ("to_english", "to_chinese", "translate", "shorter", "expand")

_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[a-z0-9]+(?:'[a-z]+)?")
_FILLER = "filler"
MAX_TOKENS = 24  # a longer message is never small talk (and the cover search stays tiny)


@dataclass(frozen=True)
class Intent:
    """A conversational message: what it is and the language to reply in."""

    kind: Literal["small_talk", "instruction"]
    name: str  # a SmallTalk or an Instruction
    lang: Lang


def tokens(text: str) -> tuple[str, ...]:
    """Chinese characters one by one, English words, lower case; punctuation and emoji dropped."""
    return tuple(_TOKEN.findall(text.lower().replace("’", "'")))


def classify(message: str, *, after_answer: bool) -> Intent | None:
    """Small talk, an instruction about the previous answer (only `after_answer`), or None: a question."""
    words = tokens(message)
    if not words or len(words) > MAX_TOKENS:
        return None
    lang: Lang = "zh" if detect_lang(message) == "zh" else "en"
    found = _cover(words, _table(after_answer))
    if not found:
        return None
    for name in _INSTRUCTION_ORDER:
        if name in found:
            return Intent("instruction", name, lang)
    for talk in _SMALL_TALK_ORDER:
        if talk in found:
            return Intent("small_talk", talk, lang)
    return None


@cache
def _table(after_answer: bool) -> dict[tuple[str, ...], str]:
    """Phrase tokens -> its intent name (fillers: "filler"); instructions only after an answer."""
    table: dict[tuple[str, ...], str] = {tokens(f): _FILLER for f in phrases.FILLERS}
    groups: list[tuple[str, tuple[str, ...]]] = list(_SMALL_TALK.items())
    if after_answer:
        groups += _INSTRUCTIONS.items()
    for name, listed in groups:
        for phrase in listed:
            table[tokens(phrase)] = name
    return table


def _cover(words: tuple[str, ...], table: dict[tuple[str, ...], str]) -> set[str] | None:
    """The intent names of a cover of all `words` by phrases (fewest pieces), or None when none covers
    them or the cover is fillers only."""
    longest = max(len(k) for k in table)
    best: list[tuple[int, frozenset[str]] | None] = [None] * (len(words) + 1)
    best[0] = (0, frozenset())
    for end in range(1, len(words) + 1):
        for size in range(1, min(longest, end) + 1):
            before = best[end - size]
            name = table.get(words[end - size : end])
            if before is None or name is None:
                continue
            names = before[1] | ({name} if name != _FILLER else set())
            if best[end] is None or before[0] + 1 < best[end][0]:  # type: ignore[index]
                best[end] = (before[0] + 1, names)
    done = best[len(words)]
    return set(done[1]) if done and done[1] else None
