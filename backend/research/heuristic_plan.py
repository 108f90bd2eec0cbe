"""A plan without a model: the clauses of a compound question, each made self-contained.

"黑豹队的防守丢了多少分？另外，贾里德有多少次擒杀？" asks two things; so does "Who founded the club,
and when did it move to Charlotte?". The question is cut at sentence ends (？ ? ！ ! ； ; 。), then at
joiners (以及, 和, 、, "，", and, also, ...) when both sides read as questions of their own (an
interrogative word and two significant terms each): "苹果和香蕉哪个更甜？" stays whole. A part that
leans on an earlier one ("他效力于哪支球队？") gets that part's entity in place of its pronoun, because
each section is searched on its own. Occam's razor: at most max_sections parts; the rest join the last.
"""

from __future__ import annotations

import re

from backend.llm import ExtractiveLLM, Turn
from backend.research.types import Plan, SectionPlan
from backend.services.rewrite import has_pronoun, rewrite_followup
from backend.text import clean_query, query_terms
from backend.text.segment import stopwords, words

_SENTENCES = re.compile(r"(?<=[？?！!；;。])\s*|\n+")
# Words that open a further question after a sentence end: dropped, the rest is the question.
_LEADING_JOINER = re.compile(
    r"^(?:另外|此外|还有|以及|并且|而且|同时|然后|再者|和|及|也|请问|"
    r"and also|also|and|additionally|moreover|furthermore|plus|then)[\s,，、:：]*",
    re.IGNORECASE,
)
# Joiners inside one sentence, strongest first; a comma before a joiner goes with it.
_INNER_JOINERS = (
    re.compile(r"[，,]?\s*(?:以及|并且|而且|另外|此外|还有|同时)\s*"),
    re.compile(r"[，,]?\s*\b(?:and also|as well as|and|also)\b\s*", re.IGNORECASE),
    re.compile(r"\s*[和及、]\s*"),
    re.compile(r"\s*[，,]\s*"),
)
# Interrogatives, and the requests that ask without one ("介绍一下…", "Describe …").
_ZH_INTERROGATIVE = re.compile(
    r"什么|谁|哪|几|多少|多久|多大|多长|多远|多高|多重|吗|怎|如何|为何|为什么|何时|何地|何人|是否|有没有|"
    r"是不是|呢|啥"
)
_ZH_REQUEST = re.compile(r"介绍|说明|解释|描述|列出|列举|比较|总结|概述|分析")
_EN_INTERROGATIVE = re.compile(
    r"\b(?:what|who|whom|whose|which|when|where|why|how)\b|"
    r"^(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had)\b",
    re.IGNORECASE,
)
_EN_REQUEST = re.compile(r"^(?:describe|explain|list|compare|summari[sz]e|tell|give|show)\b", re.IGNORECASE)
MIN_TERMS = 2
TITLE_CHARS = 60
_TRAILING = "？?！!；;。，,、 "


def heuristic_plan(question: str, *, max_sections: int, queries_per_section: int) -> Plan:
    """Sections for the clauses of `question` (one section when it asks one thing)."""
    parts = _resolve_pronouns(split_question(question))
    if not parts:
        parts = [clean_query(question)]
    if len(parts) > max_sections:  # Occam's razor caps the plan; nothing asked is dropped
        parts = [*parts[: max_sections - 1], "；".join(parts[max_sections - 1 :])]
    sections = [_section(part, queries_per_section) for part in parts]
    return Plan(sections=sections, method="heuristic")


def split_question(question: str) -> list[str]:
    """The self-standing questions in `question`, in order (the whole question when it is one)."""
    text = clean_query(question)
    parts: list[str] = []
    for sentence in _SENTENCES.split(text):
        sentence = _strip(sentence)
        if sentence:
            parts.extend(_split_clause(sentence))
    merged: list[str] = []
    for part in parts:
        # A fragment that asks nothing by itself ("背景：", "请回答：") belongs with its neighbour.
        if merged and (not _asks(part) or not _asks(merged[-1])):
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return _dedupe(merged)


def _split_clause(text: str) -> list[str]:
    for joiner in _INNER_JOINERS:
        pieces = [_strip(p) for p in joiner.split(text)]
        pieces = [p for p in pieces if p]
        if len(pieces) > 1 and all(_asks(p) for p in pieces):
            return [q for piece in pieces for q in _split_clause(piece)]
    return [text]


def _asks(text: str) -> bool:
    """A question of its own: an interrogative word and at least two significant terms."""
    return (_is_question(text) or _is_request(text)) and len(query_terms(text)) >= MIN_TERMS


def _is_question(text: str) -> bool:
    return bool(_ZH_INTERROGATIVE.search(text) or _EN_INTERROGATIVE.search(text))


def _is_request(text: str) -> bool:
    return bool(_ZH_REQUEST.search(text) or _EN_REQUEST.search(text))


def _strip(text: str) -> str:
    text = text.strip().strip(_TRAILING)
    previous = None
    while previous != text:
        previous, text = text, _LEADING_JOINER.sub("", text).strip().strip(_TRAILING)
    return text


def _resolve_pronouns(parts: list[str]) -> list[str]:
    """Each part with a pronoun ("他", "it", "its") made self-contained with the entity of the parts
    before it (no model is asked). A part without one stands alone: it already asks a question of its
    own (split_question checked), however short, and "this season" or "该公司" in a clause usually
    names something in the documents, not in the other clauses."""
    resolved: list[str] = []
    fallback = ExtractiveLLM()  # cannot complete: rewrite_followup uses its pronoun heuristic
    for part in parts:
        history = [Turn("user", p) for p in resolved]
        follow_up = history and has_pronoun(part)
        resolved.append(rewrite_followup(part, history, fallback).query if follow_up else part)
    return resolved


def _section(part: str, queries_per_section: int) -> SectionPlan:
    question = part
    if _is_question(part) and not part.endswith(tuple("？?")):
        question += "？" if re.search(r"[\u4e00-\u9fff]", part) else "?"
    queries = _dedupe([question, keywords(part)])[: max(1, queries_per_section)]
    title = part if len(part) <= TITLE_CHARS else part[: TITLE_CHARS - 1].rstrip() + "…"
    return SectionPlan(title=title, question=question, queries=queries)


def keywords(text: str, limit: int = 8) -> str:
    """The clause's significant words, unstemmed and in order: a second search that weighs every
    term alike (the question's phrasing steers the vector leg; this one does not)."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in stop and (len(word) > 1 or not word.isascii()):
            seen.setdefault(word, None)
    return " ".join(list(seen)[:limit])


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = "".join(item.lower().split()).strip(_TRAILING)
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
