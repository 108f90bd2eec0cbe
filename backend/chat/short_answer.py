"""The short answer of a chat turn that asks one thing (issue 30 item 4, seed FormatAnswer): a name, a
date or a number taken from the answer and the sources it cites, in the turn's diagnostics.

No model is asked: the chat answer is already short and written (a second call would add its latency
and cost to every factual turn for a line the answer holds); the heuristic reads the answer first,
then the cited passages. A yes/no needs a model, so it has none here.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chat.citations import MARKER, Cited
from backend.chat.diagnostics import ShortAnswerOut
from backend.search.types import ScoredChunk
from backend.text.answers import extract_answer, question_type


def chat_short_answer(question: str, cited: Cited, numbered: Sequence[ScoredChunk]) -> ShortAnswerOut | None:
    """None unless the question asks one thing (not yes/no) and the cited answer holds one of its kind."""
    kind = question_type(question)
    if kind is None or kind == "yesno" or not cited.cited:
        return None
    sources = [numbered[n - 1].content for n in sorted(cited.cited) if 0 < n <= len(numbered)]
    text = extract_answer(question, kind, [MARKER.sub("", cited.answer), *sources])
    return ShortAnswerOut(text=text, kind=kind) if text else None
