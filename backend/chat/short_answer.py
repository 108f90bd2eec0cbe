"""The short answer of a chat turn that asks one thing (issue 30 item 4, seed FormatAnswer): a name, a
date or a number taken from the answer and the sources it cites, in the turn's diagnostics.

No model is asked: the chat answer is already short and written (a second call would add its latency
and cost to every factual turn for a line the answer holds); the heuristic reads the answer first,
then the cited passages. A yes/no gets 是/否 (Yes/No) with the sentence that says so, when one
sentence names every anchor of the question (backend/text/answers.py, `yes_no_answer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.citations import MARKER, Cited
from backend.chat.diagnostics import ShortAnswerOut
from backend.search.types import ScoredChunk
from backend.text.answers import extract_answer, question_type, yes_no_answer


def chat_short_answer(question: str, cited: Cited, numbered: Sequence[ScoredChunk]) -> ShortAnswerOut | None:
    """None unless the question asks one thing and the cited answer holds one of its kind."""
    kind = question_type(question)
    if kind is None or not cited.cited:
        return None
    sources = [numbered[n - 1].content for n in sorted(cited.cited) if 0 < n <= len(numbered)]
    texts = [MARKER.sub("", cited.answer), *sources]
    text = yes_no_answer(question, texts) if kind == "yesno" else extract_answer(question, kind, texts)
    return ShortAnswerOut(text=text, kind=kind) if text else None
