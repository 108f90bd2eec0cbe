"""Follow-up messages made self-contained before retrieval: the search has no conversation memory."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import jieba.posseg

from backend.chat.conversations import PreviousAnswer
from backend.errors import ProviderError
from backend.llm.base import LLM, Turn
from backend.llm.parsing import content_lines
from backend.llm.prompts import format_history, load_prompt
from backend.text import detect_lang, query_terms
from backend.text.segment import stopwords

log = logging.getLogger(__name__)

# Pronouns that stand for the entity, excluding compounds such as 其他, 其中, 尤其, 极其.
_ZH_PRONOUN = re.compile(r"它们|他们|她们|它|(?<!其)他|她|(?<![尤极])其(?![他中实次余])")
_ZH_DEICTIC = re.compile(r"这|那|该|此")
_ZH_LEADING_THEN = re.compile(r"^(?:那么|那)[，,\s]*(?=它|他|她|其)")
_EN_PRONOUN = re.compile(r"\b(?:it|they|them|he|him|she|her)\b", re.IGNORECASE)
_EN_POSSESSIVE = re.compile(r"\b(?:its|their|his)\b", re.IGNORECASE)
_EN_DEICTIC = re.compile(r"\b(?:this|that|these|those)\b", re.IGNORECASE)
_EN_NAME = re.compile(r"\b[A-Z][\w&'-]*(?:\s+[A-Z][\w&'-]*)*")
_EN_IMPERATIVES = frozenset(
    "tell give show list explain describe compare summarize summarise please also".split()
)
# Ellipsis: the message names no subject of its own and continues the previous turn ("那第二个呢？",
# "and the second one?", "what about it?").
_ELLIPSIS = re.compile(r"呢[\s？?。.!！]*$|^(?:and|what about|how about|but)\b", re.IGNORECASE)
_ZH_PROPER_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz", "eng"})

MIN_STANDALONE_TERMS = 3  # fewer significant terms than this, and no name: the message leans on context
# A rewrite adds an entity name or two; anything much longer is the model talking, not a query.
MAX_GROWTH_CHARS = 100

RewriteMethod = Literal["unchanged", "llm", "heuristic", "ellipsis"]


@dataclass(frozen=True)
class Rewrite:
    """The query to retrieve with, and how it was made."""

    query: str  # self-contained query to retrieve with
    method: RewriteMethod


def rewrite_followup(
    message: str, history: Sequence[Turn], llm: LLM, previous: PreviousAnswer | None = None
) -> Rewrite:
    """A self-contained version of `message`: by the LLM when it can, else by the heuristic (which reads
    the previous answer: its query and the document it cited first)."""
    message = message.strip()
    if not history:
        return Rewrite(message, "unchanged")
    prompt = load_prompt("rewrite_followup").render(history=format_history(history), message=message)
    try:
        completion = llm.complete("", prompt)
    except ProviderError as exc:
        log.warning("follow-up rewrite fell back to the heuristic: %s", exc)
        completion = None
    query = clean_completion(completion, message) if completion else None
    if query:
        return Rewrite(query, "llm")
    return _heuristic(message, history, previous)


def clean_completion(text: str, message: str) -> str | None:
    """The query in a model's output (first content line, labels, quotes and markdown removed), or None."""
    lines = content_lines(text)
    if not lines:
        return None
    line = lines[0]
    return line if len(line) <= len(message) * 3 + MAX_GROWTH_CHARS else None


def _heuristic(message: str, history: Sequence[Turn], previous: PreviousAnswer | None) -> Rewrite:
    """Ellipsis ("为什么？", "那第二个呢？") is searched with the previous turn's query before it; a pronoun
    is replaced by the previous turn's subject: the title of the document its answer cited first (what
    the answer was about), else the leading entity of an earlier question."""
    if not _looks_like_followup(message):
        return Rewrite(message, "unchanged")
    if _is_ellipsis(message):
        earlier = (previous.query if previous else "") or _last_user_message(history)
        return Rewrite(f"{earlier} {message}", "ellipsis") if earlier else Rewrite(message, "unchanged")
    entity = (previous.top_title() if previous else "") or _main_entity(history)
    if not entity or entity.lower() in message.lower():
        return Rewrite(message, "unchanged")
    return Rewrite(_insert_entity(message, entity), "heuristic")


def _is_ellipsis(message: str) -> bool:
    """No subject words of its own (为什么？, what about it?), or a continuation (…呢？, and …?)."""
    bare = _EN_PRONOUN.sub(" ", _EN_POSSESSIVE.sub(" ", _ZH_PRONOUN.sub("", message)))
    return not query_terms(bare) or (not _has_pronoun(message) and bool(_ELLIPSIS.search(message.strip())))


def _last_user_message(history: Sequence[Turn]) -> str:
    return next((t.content for t in reversed(history) if t.role == "user" and t.content.strip()), "")


def _looks_like_followup(message: str) -> bool:
    if _has_pronoun(message) or _ZH_DEICTIC.search(message) or _EN_DEICTIC.search(message):
        return True
    terms = query_terms(message)
    # Search-mode segmentation also yields the parts of a word (出生日期 -> 出生, 日期); count words once.
    words = [t for t in terms if not any(t != other and t in other for other in terms)]
    return len(words) < MIN_STANDALONE_TERMS and not _has_proper_noun(message)


def leans_on_earlier_text(text: str) -> bool:
    """Whether a pronoun (它, 他, 其, it, they, its...) comes before anything the text names itself:
    "他效力于哪支球队" and "what is its largest tributary" lean on an earlier sentence;
    "路易九世在其任期" names its own referent first."""
    starts = [m.start() for p in (_ZH_PRONOUN, _EN_PRONOUN, _EN_POSSESSIVE) if (m := p.search(text))]
    return bool(starts) and not query_terms(text[: min(starts)])


def _has_pronoun(text: str) -> bool:
    return bool(_ZH_PRONOUN.search(text) or _EN_PRONOUN.search(text) or _EN_POSSESSIVE.search(text))


def _has_proper_noun(text: str) -> bool:
    if detect_lang(text) == "en":
        return any(_name_part(m.group()) for m in _EN_NAME.finditer(text))
    return any(flag in _ZH_PROPER_TAGS for _, flag in jieba.posseg.cut(text))


def _main_entity(history: Sequence[Turn]) -> str:
    """The entity of the newest user message that names one, preferring messages without pronouns."""
    user_messages = [t.content for t in reversed(history) if t.role == "user" and t.content.strip()]
    for text in sorted(user_messages, key=_has_pronoun):  # stable: newest first within each group
        entity = _entity_of(text)
        if entity:
            return entity
    return ""


def _entity_of(text: str) -> str:
    """The leading noun phrase (Chinese) or name (English) of a message, else its first terms."""
    if detect_lang(text) == "en":
        names = [name for m in _EN_NAME.finditer(text) if (name := _name_part(m.group()))]
        return names[0] if names else " ".join(query_terms(text)[:2])
    run: list[str] = []
    for word, flag in jieba.posseg.cut(text):
        if flag.startswith("n") or flag == "eng":
            run.append(word)
        elif run:
            break
    return "".join(run) or "".join(query_terms(text)[:2])


def _name_part(name: str) -> str:
    # A sentence's capitalised first word ("Who", "And", "Tell") is not part of a name.
    words = name.split()
    while words and (words[0].lower() in stopwords() or words[0].lower() in _EN_IMPERATIVES):
        words.pop(0)
    return " ".join(words)


def _insert_entity(message: str, entity: str) -> str:
    """The message with its pronouns replaced by the entity, or the entity prepended."""
    if detect_lang(message) == "en":
        replaced = _EN_POSSESSIVE.sub(f"{entity}'" if entity.endswith("s") else f"{entity}'s", message)
        replaced = _EN_PRONOUN.sub(entity, replaced)
    else:
        replaced = _ZH_PRONOUN.sub(entity, _ZH_LEADING_THEN.sub("", message))
    return replaced if replaced != message else f"{entity} {message}"
