"""The branch's reflection after a search round (seed RESEARCH_REFLECT_PROMPT): what is established,
what is missing, which one or two entities deserve an encyclopedia check, which candidates a list in
the evidence offers, and which passages hit several anchors of the sub-question at once.

The model reflects in the same call that judges sufficiency (evaluate.py extends that call's JSON);
each field it leaves out or garbles falls back to the heuristic form here, so a malformed reflection
never costs the verdict. The reflection drives the next round: the entity check, a search per
candidate, and the gap queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jieba.posseg

from backend.llm.parsing import clean_line
from backend.research.heuristic_plan import keywords
from backend.research.qtype import asks_for_a_name
from backend.research.records import EvidenceRecord, Reliability, apply_ratings, heuristic_records
from backend.research.types import EvidenceItem

MAX_ANCHORS = 6
MAX_LIST = 5
TITLE = re.compile(r"《([^》]{1,40})》")
_QUOTED = re.compile(r"[\"“「]([^\"”」]{2,40})[\"”」]")
_INTERROGATIVE = re.compile(
    r"^(?:什么|什麼|谁|誰|哪.?|几.?|多少|吗|嗎|是否|如何|怎么|怎麼|what|who|whom|whose|which|when|where|why|how)$",
    re.IGNORECASE,
)
EN_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|van|da|le|la)?\s*[A-Z][\w'’.-]*)*")
EN_NOT_NAMES = frozenset(
    "What Who Whom Whose Which When Where Why How Is Are Was Were Do Does Did Can The A An In On Of "
    "And Also Then This That These Those It".split()
)
# Common Chinese surnames: an enumerated item opening on one reads as a person's name.
_SURNAMES = frozenset(
    "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何林罗羅高郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧曹彭曾肖"
    "田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范金石廖贾賈夏韦韋付方白邹鄒孟熊秦"
    "邱江尹薛闫閻段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔向汤湯常温溫康施文牛樊葛邢安齐齊"
    "易乔喬伍庞龐颜顏倪庄莊聂聶章鲁魯岳翟殷詹申欧歐耿关關兰蘭焦俞左柳甘祝包宁寧尚符舒阮柯纪紀梅童凌毕畢"
)
_ZH_LIST = re.compile(r"(?:[\u4e00-\u9fff·]{2,4}、){2,}[\u4e00-\u9fff·]{2,4}")
_EN_LIST = re.compile(
    r"(?:[A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+){0,2},\s){2,}(?:and\s)?[A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+){0,2}"
)

ReflectionMethod = Literal["llm", "heuristic"]


@dataclass
class ModelReflection:
    """The reflection fields of the model's verdict; None where it gave nothing usable."""

    established: list[str] | None = None
    entities: list[str] | None = None
    candidates: list[str] | None = None
    hypotheses: list[str] | None = None
    ratings: dict[int, tuple[str, Reliability | None]] = field(default_factory=dict)


@dataclass
class Reflection:
    round: int
    method: ReflectionMethod
    established: list[str]
    missing: str
    entities: list[str]  # worth an encyclopedia check (checks.py)
    candidates: list[str]  # a candidate set to check one by one (checks.py)
    hypotheses: list[str]  # claims the evidence does not support yet
    anchors: list[str]  # the sub-question's anchors (multi-anchor hits)
    strong_hits: list[int]  # evidence ids of passages naming several anchors at once
    records: list[EvidenceRecord]

    def as_event(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "method": self.method,
            "established": self.established,
            "missing": self.missing,
            "entities": self.entities,
            "candidates": self.candidates,
            "hypotheses": self.hypotheses,
            "anchors": self.anchors,
            "strong_hits": self.strong_hits,
            "records": [r.as_dict() for r in self.records],
        }


def reflect(
    question: str,
    round_no: int,
    ranked: Sequence[EvidenceItem],
    *,
    missing: str,
    model: ModelReflection | None,
    max_entities: int,
) -> Reflection:
    """The round's reflection: the model's fields where it gave them, the heuristic's elsewhere."""
    anchors = anchor_terms(question)
    records = heuristic_records(ranked, anchors)
    if model is not None:
        apply_ratings(records, model.ratings)
    strong = [r.id for r in records if r.strong_hit]
    # A strong hit is the best evidence there is: it comes first wherever the top evidence is read.
    texts = [i.chunk.content for i in sorted(ranked, key=lambda i: i.id not in strong)]
    established = [r.statement for r in records if r.statement and r.reliability != "low"][:3]
    candidates = candidate_set(question, texts[:3]) if asks_for_a_name(question) else []
    entities = named_entities(question, limit=max_entities)
    if len(entities) < max_entities and texts:
        entities += [e for e in named_entities(texts[0], limit=max_entities) if e not in entities]
    used_model = model is not None
    m = model or ModelReflection()
    return Reflection(
        round=round_no,
        method="llm" if used_model else "heuristic",
        established=m.established if m.established is not None else established,
        missing=missing,
        entities=(m.entities if m.entities is not None else entities)[:max_entities],
        candidates=(m.candidates if m.candidates is not None else candidates)[:MAX_LIST],
        hypotheses=m.hypotheses or [],
        anchors=anchors,
        strong_hits=strong,
        records=records,
    )


def model_reflection(value: dict[str, Any]) -> ModelReflection:
    """The reflection fields of the verdict JSON, each checked on its own (a bad one is None)."""
    return ModelReflection(
        established=_strings(value.get("established"), 200),
        entities=_strings(value.get("entities"), 40),
        candidates=_strings(value.get("candidates"), 40),
        hypotheses=_strings(value.get("hypotheses"), 200),
        ratings=_ratings(value.get("evidence")),
    )


def anchor_terms(question: str) -> list[str]:
    """The sub-question's anchors: titles and quoted names whole, then its significant words."""
    found = [*TITLE.findall(question), *(q for q in _QUOTED.findall(question))]
    for word in keywords(question, limit=12).split():
        if not _INTERROGATIVE.match(word) and not any(word in a for a in found):
            found.append(word)
    return [a for a in dict.fromkeys(found) if len(a) >= 2][:MAX_ANCHORS]


def named_entities(text: str, *, limit: int) -> list[str]:
    """Names in `text` an encyclopedia may hold: titles, English proper names, Chinese names, places,
    organisations (jieba's dictionary tags; the HMM tagger is too slow for every round)."""
    found = list(TITLE.findall(text))
    found += [m.group().strip() for m in EN_NAME.finditer(text) if m.group().split()[0] not in EN_NOT_NAMES]
    if re.search(r"[\u4e00-\u9fff]", text):
        found += [
            w
            for w, flag in jieba.posseg.cut(text[:400], HMM=False)
            if len(w) >= 2 and flag[:2] in ("nr", "ns", "nt", "nz")
        ]
    return [e for e in dict.fromkeys(found) if 2 <= len(e) <= 40][:limit]


def candidate_set(question: str, texts: Sequence[str]) -> list[str]:
    """The first list of names in the top evidence (three or more, the seed's 配音演员 list): Chinese
    names joined by 、 opening on a surname, or English capitalised names joined by commas; names the
    question already gives are not candidates."""
    for text in texts:
        for match in _ZH_LIST.finditer(text):
            items = [s.strip("·") for s in match.group().split("、")]
            if sum(1 for s in items if s[:1] in _SURNAMES and len(s) <= 3) == len(items):
                return _new(items, question)
        for match in _EN_LIST.finditer(text):
            items = [s.strip() for s in re.split(r",\s(?:and\s)?|\sand\s", match.group())]
            names = [s for s in items if s and s.split()[0] not in EN_NOT_NAMES]
            if len(names) >= 3:
                return _new(names, question)
    return []


def _new(items: list[str], question: str) -> list[str]:
    return [s for s in dict.fromkeys(items) if s and s not in question][:MAX_LIST]


def _strings(value: Any, max_chars: int) -> list[str] | None:
    if not isinstance(value, list):
        return None
    cleaned = [clean_line(v) for v in value if isinstance(v, str)]
    return [v for v in dict.fromkeys(cleaned) if 1 <= len(v) <= max_chars][:MAX_LIST]


def _ratings(value: Any) -> dict[int, tuple[str, Reliability | None]]:
    out: dict[int, tuple[str, Reliability | None]] = {}
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            continue
        statement = entry.get("statement")
        level = entry.get("reliability")
        reliability: Reliability | None = level if level in ("high", "medium", "low") else None
        out[entry["id"]] = (clean_line(statement) if isinstance(statement, str) else "", reliability)
    return out
