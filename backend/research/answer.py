"""The short final answer (seed FormatAnswer): for a question that asks one thing — a name, a date, a
number, a yes or no — one normalised line, put first in the report and returned as `short_answer`.

With a model it reads the written report (one call, the writing phase's budget); without one (or when
it fails) the answer is extracted from the top cited evidence: the sentences naming the most anchors
of the question, searched for a thing of the kind asked (a date, a number with its unit, a name). A
yes/no has no heuristic form: it is skipped and marked so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import jieba.posseg

from backend.llm import load_prompt
from backend.llm.parsing import clean_line
from backend.llm.prompts import neutralise
from backend.research.qtype import QuestionType, question_type
from backend.research.records import anchor_count
from backend.research.reflect import EN_NAME, EN_NOT_NAMES, TITLE, anchor_terms
from backend.research.sections import RunContext, SectionState
from backend.research.types import Plan
from backend.research.write import MARKER, SectionDraft

MAX_ANSWER_CHARS = 80
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "found": {"type": "boolean"}},
    "required": ["answer", "found"],
}
_SENTENCE = re.compile(r"(?<=[。！？!?；;])|(?<=[.])\s+|\n+")
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATES = (
    re.compile(r"(?:公元前?)?\d{1,4}年(?:\d{1,2}月)?(?:\d{1,2}[日号])?"),
    re.compile(
        rf"\b{_MONTHS}\s+\d{{1,2}},\s+\d{{4}}\b|\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}\b|\b{_MONTHS}\s+\d{{4}}\b"
    ),
    re.compile(r"\b1\d{3}\b|\b20\d{2}\b"),
)
_ZH_NUMBER = re.compile(r"\d[\d,，.]*\s*(?:万|亿|千|百)?(?:[%％]|[a-zA-Z]+|[\u4e00-\u9fff])?")
_EN_NUMBER = re.compile(r"\d[\d,.]*(?:\s*(?:%|percent|million|billion|thousand|hundred))?(?:\s+[a-z]+)?")
_NAME_TAGS = {"who": ("nr",), "entity": ("nr", "ns", "nt", "nz")}

AnswerMethod = Literal["llm", "heuristic", "skipped"]


@dataclass
class ShortAnswer:
    text: str | None
    kind: QuestionType | None  # what the question asks for (None: not a single-fact question)
    method: AnswerMethod
    reason: str | None = None  # why there is none (skipped, or nothing of the kind was found)
    model_failure: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def short_answer(
    ctx: RunContext, plan: Plan, states: Sequence[SectionState], drafts: Sequence[SectionDraft]
) -> ShortAnswer:
    """The answer line of a single-fact question, or why there is none."""
    kind = question_type(ctx.question)
    if len(plan.sections) != 1:
        return ShortAnswer(None, None, "skipped", "the question asks several things")
    if kind is None:
        return ShortAnswer(None, None, "skipped", "not a single-fact question")
    draft = drafts[0]
    if not draft.cited:
        return ShortAnswer(None, kind, "skipped", "nothing was found to answer from")
    failure = None
    if ctx.model.generative:
        prompt = load_prompt("research_format_answer").render(
            question=ctx.question, kind=kind, report=neutralise(MARKER.sub("", draft.text))
        )
        value, outcome = await ctx.model.complete_json("write", "", prompt, ANSWER_SCHEMA)
        answer = _from_json(value, kind) if value is not None else None
        if answer is not None:
            return answer
        failure = outcome.failure or "malformed answer"
    texts = [draft.evidence[i].chunk.content for i in draft.cited[:3]]
    answer = heuristic_answer(ctx.question, kind, texts)
    answer.model_failure = failure
    return answer


def heuristic_answer(question: str, kind: QuestionType, texts: Sequence[str]) -> ShortAnswer:
    """A thing of the kind asked from the sentences naming the most anchors of the question."""
    if kind == "yesno":
        return ShortAnswer(None, kind, "skipped", "a yes/no answer needs a model")
    anchors = anchor_terms(question)
    sentences = [" ".join(s.split()) for t in texts for s in _SENTENCE.split(t) if s and s.strip()]
    ranked = sorted(sentences, key=lambda s: -anchor_count(s, anchors))  # stable: evidence order
    for sentence in ranked[:3]:
        found = _extract(kind, sentence, question)
        if found:
            return ShortAnswer(normalise_answer(found), kind, "heuristic")
    return ShortAnswer(None, kind, "heuristic", f"no {kind} found in the top cited evidence")


def normalise_answer(text: str) -> str:
    text = clean_line(" ".join(text.split())).strip(" ，,。.;；:：、")
    return text[:MAX_ANSWER_CHARS]


def _extract(kind: QuestionType, sentence: str, question: str) -> str | None:
    def new(values: Sequence[str]) -> str | None:
        return next((v for v in values if v.strip() and v.strip() not in question), None)

    if kind == "when":
        for pattern in _DATES:
            value = new([m.group() for m in pattern.finditer(sentence)])
            if value:
                return value
        return None
    if kind == "number":
        pattern = _ZH_NUMBER if re.search(r"[\u4e00-\u9fff]", sentence) else _EN_NUMBER
        return new([m.group().strip() for m in pattern.finditer(sentence)])
    names = [t for t in TITLE.findall(sentence)] if kind == "entity" else []
    names += [
        m.group().strip() for m in EN_NAME.finditer(sentence) if m.group().split()[0] not in EN_NOT_NAMES
    ]
    if re.search(r"[\u4e00-\u9fff]", sentence):
        tags = _NAME_TAGS.get(kind, ("nr",))
        names = [w for w, f in jieba.posseg.cut(sentence) if len(w) >= 2 and f.startswith(tags)] + names
    return new(names)


def _from_json(value: dict[str, Any], kind: QuestionType) -> ShortAnswer | None:
    found, text = value.get("found"), value.get("answer")
    if not isinstance(found, bool) or not isinstance(text, str):
        return None
    answer = normalise_answer(MARKER.sub("", text))
    if not found or not answer:
        return ShortAnswer(None, kind, "llm", "the report does not give the answer")
    return ShortAnswer(answer, kind, "llm")
