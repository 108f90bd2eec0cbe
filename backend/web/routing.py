"""Which engine a query goes to (seed multi-agent-research.md: "each sub-question names one engine;
Chinese -> Bocha, English -> Serper"; Baike only for a pure entity name; evidence-retention.md: the
academic engines). A heuristic, no model: the research plan's model may name the engine itself
(backend/research/plan.py), and this is what a query without one gets.

The rules, first match wins:
1. an academic question (a paper, a study, a journal, 论文, 文献, ...) -> ncbi when it is biomedical
   (gene, clinical, 癌, 药物, ...), else semantic_scholar;
2. a pure Chinese entity name (short, no question word, no verb of asking) -> baike, *beside* the
   Chinese web engine: Baike has no entry for many names (an empty list), and the web engine covers
   them at the cost of one more request; the evidence-check that wants Baike alone asks for it
   explicitly (WebSearch.legs(..., engines=("baike",))). An English name goes to the English engine:
   Baike's entries are Chinese;
3. by language: mostly CJK -> bocha, else serper.
When the engine a rule names is not configured, the query goes to the configured engine that serves
its language best (`_FALLBACK`); with only general engines configured (Tavily, SearXNG) every query
goes to each of them, as it did before routing existed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from backend.settings.web import PROVIDER_NAMES

Kind = Literal["academic", "entity", "zh", "en"]
ENGINES: tuple[str, ...] = PROVIDER_NAMES
ROUTED_ENGINES: tuple[str, ...] = ("bocha", "serper", "baike", "semantic_scholar", "ncbi")

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_ACADEMIC = re.compile(
    r"论文|文献|综述|期刊|学术|研究表明|研究发现|实验研究|临床试验|荟萃分析|引用|被引|"
    r"\b(?:papers?|stud(?:y|ies)|journals?|publications?|published research|literature|"
    r"meta-analys[ie]s|systematic review|clinical trials?|preprints?|arxiv|doi|cited|citations?|"
    r"peer[- ]reviewed|research on|researchers)\b",
    re.IGNORECASE,
)
_BIOMEDICAL = re.compile(
    r"基因|蛋白|细胞|疾病|病毒|细菌|肿瘤|癌|临床|药物|疫苗|患者|治疗|医学|病理|抗体|免疫|"
    r"\b(?:genes?|genom\w*|proteins?|cells?|diseases?|virus\w*|bacteri\w*|tumou?rs?|cancers?|"
    r"clinical|drugs?|vaccines?|patients?|therap\w*|treatments?|medic\w*|patholog\w*|antibod\w*|"
    r"immun\w*|pubmed|mrna|dna|rna|enzymes?|receptors?|mutations?|syndromes?|infections?)\b",
    re.IGNORECASE,
)
# A name asks nothing: any of these makes the text a question or a request, not an entity name.
_ASKING = re.compile(
    r"[？?！!。，,；;：:]|什么|什麼|谁|誰|哪|几|幾|多少|吗|嗎|怎|如何|为何|為何|为什么|是否|有没有|"
    r"是不是|呢|介绍|说明|解释|比较|列出|\b(?:what|who|whom|whose|which|when|where|why|how|is|are|"
    r"was|were|does|did|do)\b",
    re.IGNORECASE,
)
_VERBISH = re.compile(r"[的了是在有和与及]")  # a phrase with these is a description, not a name
MAX_ENTITY_CHARS = 16
# "Who/what is X" asked of one name: X is the entity (seed: Baike takes the name, never the question).
_ENTITY_QUESTION = (
    re.compile(r"^(?:请)?(?:简单)?(?:介绍一下|介绍|简介)(?P<name>.+?)[。.？?！!]*$"),
    re.compile(r"^(?:谁是|什么是)(?P<name>.+?)[？?]*$"),
    re.compile(r"^(?P<name>.+?)是(?:谁|什么人|什么)[？?]*$"),
)

# Who serves a kind when its engine is missing, best first.
_FALLBACK: dict[str, tuple[str, ...]] = {
    "zh": ("bocha", "tavily", "searxng", "serper"),
    "en": ("serper", "tavily", "searxng", "bocha"),
}


@dataclass(frozen=True)
class Route:
    """Where a query goes and why: `wanted` is what the rule names, `engines` what is configured of it
    (or the fallback), `reason` one line for the diagnostics."""

    engines: tuple[str, ...]
    kind: Kind
    wanted: tuple[str, ...]
    reason: str
    entity: str | None = None  # the name Baike is asked for (the query itself may be a question)

    def as_dict(self) -> dict[str, object]:
        return {
            "engines": list(self.engines),
            "kind": self.kind,
            "wanted": list(self.wanted),
            "reason": self.reason,
            "entity": self.entity,
        }


def language(text: str) -> Literal["zh", "en"]:
    """zh when CJK characters are at least as many as Latin words (a Chinese sentence with an English
    name is still Chinese), en otherwise."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(text)) else "en"


def is_entity_name(text: str) -> bool:
    """A pure (Chinese) entity name: short, asks nothing, describes nothing ("张欣", "猫眼三姐妹")."""
    name = text.strip()
    return (
        bool(name)
        and len(name) <= MAX_ENTITY_CHARS
        and language(name) == "zh"
        and not _ASKING.search(name)
        and not _VERBISH.search(name)
        and len(name.split()) <= 2
    )


def entity_of(text: str) -> str | None:
    """The entity name `text` is, or asks about as a whole ("介绍一下张欣", "张欣是谁？"); None otherwise."""
    name = text.strip()
    if is_entity_name(name):
        return name
    for pattern in _ENTITY_QUESTION:
        found = pattern.match(name)
        if found and is_entity_name(found["name"].strip("《》“”\"' ")):
            return found["name"].strip("“”\"' ")
    return None


def classify(text: str) -> tuple[Kind, tuple[str, ...], str]:
    """The rule's kind for `text`, the engines it names (first is the rule's engine) and why."""
    if _ACADEMIC.search(text):
        if _BIOMEDICAL.search(text):
            return "academic", ("ncbi",), "an academic question on a biomedical subject -> ncbi"
        return "academic", ("semantic_scholar",), "an academic question -> semantic_scholar"
    name = entity_of(text)
    if name is not None:
        said = "a pure entity name" if name == text.strip() else f"a question about the entity {name}"
        return "entity", ("baike", "bocha"), f"{said} -> baike (beside bocha)"
    if language(text) == "zh":
        return "zh", ("bocha",), "Chinese -> bocha"
    return "en", ("serper",), "English -> serper"


def route(text: str, configured: Sequence[str], *, prefer: str | None = None) -> Route:
    """The configured engines `text` goes to. `prefer` (the plan's engine for its section) replaces the
    rule when it names a routed engine."""
    kind, wanted, reason = classify(text)
    entity = entity_of(text)
    if prefer in ROUTED_ENGINES and prefer not in wanted[:1]:
        wanted, reason = (prefer,), f"the plan names {prefer}"
    if configured and not set(configured) & set(ROUTED_ENGINES):
        # Only general engines (Tavily, SearXNG): every query goes to each of them, as before routing.
        return Route(
            tuple(configured), kind, wanted, f"{reason}; none is configured, so every provider", entity
        )
    engines = tuple(e for e in wanted if e in configured)
    if engines and engines[0] == wanted[0]:
        return Route(engines, kind, wanted, reason, entity)
    # The rule's engine is missing: the configured engine that serves the text's language best.
    lang = language(text)
    academic = tuple(e for e in ("semantic_scholar", "ncbi") if e != wanted[0]) if kind == "academic" else ()
    fallback = next((e for e in (*academic, *_FALLBACK[lang]) if e in configured), None)
    if fallback is None:
        fallback = next(iter(configured), None)
    if fallback is None:
        return Route((), kind, wanted, reason + "; no web provider is configured", entity)
    missing = wanted[0]
    return Route((fallback,), kind, wanted, f"{reason}; {missing} is not configured, so {fallback} ({lang})")
