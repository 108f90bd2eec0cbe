"""A plan without a model: the clauses of a compound question, each made self-contained.

"黑豹队的防守丢了多少分？另外，贾里德有多少次擒杀？" asks two things; so does "Who founded the club,
and when did it move to Charlotte?". The question is cut at sentence ends (？ ? ！ ! ； ; 。), then at
joiners (以及, 和, 、, "，", and, also, ...) when both sides read as questions of their own (an
interrogative word and two significant terms each): "苹果和香蕉哪个更甜？" stays whole. A part that
leans on an earlier one ("他效力于哪支球队？") gets that part's entity in place of its pronoun, because
each section is searched on its own; a part that names the earlier one's *answer* ("哪一地区…？该地区
…？", backend/text/bridge.py) is a multi-hop step: it waits for that answer.
Occam's razor: at most max_sections parts; the rest join the last.
"""

from __future__ import annotations

import dataclasses
import re

from backend.chat.rewrite import leans_on_earlier_text, rewrite_followup
from backend.llm import ExtractiveLLM, Turn
from backend.research.types import Plan, SectionPlan
from backend.text import clean_query, query_terms
from backend.text.bridge import bridge_phrase
from backend.text.segment import stopwords, words
from backend.web.routing import classify as classify_engine

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
# Simplified and Traditional forms (the development sets include Taiwan's DRCD): 什麼, 誰, 幾, 嗎, 為何.
_ZH_INTERROGATIVE = re.compile(
    r"什么|什麼|甚麼|谁|誰|哪|几|幾|多少|多久|多大|多长|多長|多远|多遠|多高|多重|吗|嗎|怎|如何|为何|為何|"
    r"为什么|為什麼|何(?=[时時地人种種处處者物事年样樣])|是否|有没有|有沒有|是不是|呢|啥"
)
_ZH_REQUEST = re.compile(r"介绍|介紹|说明|說明|解释|解釋|描述|列出|列举|列舉|比较|比較|总结|總結|概述|分析")
_EN_INTERROGATIVE = re.compile(
    r"\b(?:what|who|whom|whose|which|when|where|why|how)\b|"
    r"^(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had)\b",
    re.IGNORECASE,
)
_EN_REQUEST = re.compile(r"^(?:describe|explain|list|compare|summari[sz]e|tell|give|show)\b", re.IGNORECASE)
# A question asking for sources in both languages (seed: a bilingual need becomes two sub-questions).
_BILINGUAL = re.compile(
    r"中英文|中文和英文|英文和中文|中外文献|中英双语|国内外(?:资料|文献|报道)|"
    r"\b(?:both )?(?:chinese and english|english and chinese) (?:sources|literature|press|media)\b",
    re.IGNORECASE,
)
MIN_TERMS = 2
TITLE_CHARS = 60
_TRAILING = "？?！!；;。，,、 "


def heuristic_plan(question: str, *, max_sections: int, queries_per_section: int) -> Plan:
    """Sections for the clauses of `question` (one section when it asks one thing)."""
    parts = split_question(question)
    bridges = _bridges(parts)
    parts = _resolve_pronouns(parts, bridges)
    if not parts:
        parts = [clean_query(question)]
    if len(parts) > max_sections:  # Occam's razor caps the plan; nothing asked is dropped
        parts = [*parts[: max_sections - 1], "；".join(parts[max_sections - 1 :])]
    sections = [_section(part, queries_per_section) for part in parts]
    for i, phrase in bridges.items():
        if i < len(sections) and phrase in sections[i].question:
            sections[i] = dataclasses.replace(sections[i], after=i - 1, bridge=phrase)
    if _BILINGUAL.search(question) and len(sections) < max_sections:
        sections = _bilingual(sections, max_sections)
    return Plan(sections=sections, method="heuristic")


def _bilingual(sections: list[SectionPlan], max_sections: int) -> list[SectionPlan]:
    """A question that asks for Chinese and English sources: each section also as a twin searched by
    the other language's engine (seed: one engine per sub-question, so a bilingual need is two), while
    max_sections allows. Cheap: no translation, the twin asks the same words of the other engine."""
    out: list[SectionPlan] = []
    room = max_sections - len(sections)
    for section in sections:
        out.append(section)
        other = {"bocha": "serper", "serper": "bocha"}.get(section.engine or "")
        if other and room > 0:
            room -= 1
            label = "English sources" if other == "serper" else "中文资料"
            out.append(
                SectionPlan(
                    f"{section.title} ({label})",
                    section.question,
                    list(section.queries),
                    engine=other,
                    engine_reason=f"rule: a bilingual need -> a second sub-question for {other}",
                )
            )
    return out


def split_question(question: str) -> list[str]:
    """The self-standing questions in `question`, in order (the whole question when it is one)."""
    text = clean_query(question)
    parts: list[tuple[str, bool]] = []  # (clause, whether it asks a question of its own)
    for raw in _SENTENCES.split(text):
        sentence = _strip(raw)
        if not sentence:
            continue
        clauses = _split_clause(sentence)
        # A sentence the user ended with a question mark is a question, interrogative or not
        # ("李会晟的国籍是？", "What is DECnet?"); clauses cut inside it must ask on their own.
        marked = len(clauses) == 1 and raw.rstrip().endswith(("?", "？")) and bool(query_terms(sentence))
        parts.extend((clause, marked or _asks(clause)) for clause in clauses)
    merged: list[tuple[str, bool]] = []
    for part, asks in parts:
        # A fragment that asks nothing by itself ("背景：", "请回答：") belongs with its neighbour.
        if merged and (not asks or not merged[-1][1]):
            merged[-1] = (f"{merged[-1][0]} {part}", asks or merged[-1][1])
        else:
            merged.append((part, asks))
    return _dedupe([part for part, _ in merged])


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


def _bridges(parts: list[str]) -> dict[int, str]:
    """part index -> the words in it that stand for the previous part's answer (multi-hop steps)."""
    found = {i: bridge_phrase(parts[i - 1], parts[i]) for i in range(1, len(parts))}
    return {i: phrase for i, phrase in found.items() if phrase}


def _resolve_pronouns(parts: list[str], bridges: dict[int, str]) -> list[str]:
    """Each part that opens on a pronoun ("他", "it", "its") made self-contained with the entity of the
    parts before it (no model is asked). Any other part stands alone: it already asks a question of its
    own (split_question checked), however short; "this season" or "该公司" in a clause usually names
    something in the documents, and "路易九世在其任期" names its own referent."""
    resolved: list[str] = []
    fallback = ExtractiveLLM()  # cannot complete: rewrite_followup uses its pronoun heuristic
    for i, part in enumerate(parts):
        history = [Turn("user", p) for p in resolved]
        # A multi-hop step stays as written: its pointing words wait for the earlier part's answer.
        follow_up = history and i not in bridges and leans_on_earlier_text(part)
        resolved.append(rewrite_followup(part, history, fallback).query if follow_up else part)
    return resolved


def _section(part: str, queries_per_section: int) -> SectionPlan:
    question = part
    if _is_question(part) and not part.endswith(tuple("？?")):
        question += "？" if re.search(r"[\u4e00-\u9fff]", part) else "?"
    queries = _dedupe([question, keywords(part)])[: max(1, queries_per_section)]
    title = part if len(part) <= TITLE_CHARS else part[: TITLE_CHARS - 1].rstrip() + "…"
    _, engines, reason = classify_engine(part)
    return SectionPlan(title, question, queries, engine=engines[0], engine_reason=f"rule: {reason}")


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
