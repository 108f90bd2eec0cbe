"""The short final answer (seed FormatAnswer): for a question that asks one thing — a name, a date, a
number, a yes or no — one normalised line, put first in the report and returned as `short_answer`.

With a model it reads the written report (one call, the writing phase's budget); without one (or when
it fails) the answer is extracted from the top cited evidence: the sentences naming the most anchors
of the question, searched for a thing of the kind asked (a date, a number with its unit, a name); a
yes/no gets 是/否 (Yes/No) with the sentence only when one names every anchor of the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from backend.chat.citations import MARKER
from backend.llm import load_prompt
from backend.llm.parsing import clean_line
from backend.llm.prompts import neutralise
from backend.research.sections import RunContext, SectionState
from backend.research.types import Plan
from backend.research.write import SectionDraft
from backend.text.answers import (
    QuestionType,
    extract_answer,
    normalise_answer,
    question_type,
    yes_no_answer,
)

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "found": {"type": "boolean"}},
    "required": ["answer", "found"],
}
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
    last = asked_section(plan)
    if last is None:
        return ShortAnswer(None, None, "skipped", "the question asks several things")
    # A multi-hop question asks its last step (searched with the earlier answers in it).
    question = ctx.question if last == 0 else states[last].plan.question
    kind = question_type(question)
    if kind is None:
        return ShortAnswer(None, None, "skipped", "not a single-fact question")
    draft = drafts[last]
    if not draft.cited:
        return ShortAnswer(None, kind, "skipped", "nothing was found to answer from")
    failure = None
    if ctx.model.generative:
        prompt = load_prompt("research_format_answer").render(
            question=question, kind=kind, report=neutralise(MARKER.sub("", draft.text))
        )
        value, outcome = await ctx.model.complete_json("write", "", prompt, ANSWER_SCHEMA)
        answer = _from_json(value, kind) if value is not None else None
        if answer is not None:
            return answer
        failure = outcome.failure or "malformed answer"
    texts = [draft.evidence[i].chunk.content for i in draft.cited[:3]]
    answer = heuristic_answer(question, kind, texts)
    answer.model_failure = failure
    return answer


def asked_section(plan: Plan) -> int | None:
    """The section whose answer is the question's: the only one, or the last step of a multi-hop
    chain (each section after the first needs the one before it); None when it asks several things."""
    sections = plan.sections
    if all(s.after == i - 1 for i, s in enumerate(sections) if i > 0):
        return len(sections) - 1
    return None


def heuristic_answer(question: str, kind: QuestionType, texts: Sequence[str]) -> ShortAnswer:
    if kind == "yesno":
        line = yes_no_answer(question, texts)
        reason = None if line else "no sentence of the top cited evidence clearly says yes or no"
        return ShortAnswer(line, kind, "heuristic", reason)
    text = extract_answer(question, kind, texts)
    reason = None if text else f"no {kind} found in the top cited evidence"
    return ShortAnswer(text, kind, "heuristic", reason)


def _from_json(value: dict[str, Any], kind: QuestionType) -> ShortAnswer | None:
    found, text = value.get("found"), value.get("answer")
    if not isinstance(found, bool) or not isinstance(text, str):
        return None
    answer = normalise_answer(clean_line(MARKER.sub("", text)))
    if not found or not answer:
        return ShortAnswer(None, kind, "llm", "the report does not give the answer")
    return ShortAnswer(answer, kind, "llm")
