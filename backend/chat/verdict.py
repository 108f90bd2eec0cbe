"""The model's own verdict (issue 26 item 2: "with a model, its own verdict"). The answer prompt tells
the model to say plainly that the sources do not hold the answer, and to cite every claim. A reply
that cites nothing and says the documents lack the answer is the model declining: a near miss the
score took for an answer (a passage on the topic that does not answer it). The turn then reads as
"not in the documents" - its route, the page's badge, the stored message, the benchmarks' outcome -
instead of an answer with sources it does not use.

A reply with any valid citation is an answer (a partial one says what is missing, and cites the rest);
a reply without a citation that does not decline stays an answer too (its lack of sources is visible
in `citations.valid`). Only a model's reply is read: the extractive generator always quotes.
"""

from __future__ import annotations

import re
from typing import Literal

from backend.llm import load_prompt

Verdict = Literal["declined"]

# The prompt's own sentences (answer_system.md rule 3 quotes them), and the ways models say the same.
_FIXED = tuple(load_prompt(f"not_found_{lang}").render().strip() for lang in ("zh", "en"))
_ZH = re.compile(
    r"(文档|资料|来源|材料|文件|上下文)[^。！？，,]{0,12}?(没有|没|未|无法|不能)[^。！？]{0,6}?"
    r"(找到|提到|提及|包含|涉及|给出|说明|记载|出现|查到|提供|回答|确定|得知|相关信息)"
    r"|没有(找到|检索到)(相关|有关)?的?信息"
)
_EN = re.compile(
    r"\b(documents?|sources?|passages?|excerpts?|context)\b[^.]{0,40}?\b"
    r"(do(es)?\s+not|don't|doesn't|did\s+not|didn't)\s+"
    r"(contain|mention|include|say|state|provide|specify|answer|cover|give)"
    r"|\bno\s+(relevant\s+)?information\b[^.]{0,40}?\b(found|available|provided|given)\b"
    r"|\bnot\s+(found|mentioned|stated|provided|specified)\s+in\s+the\s+(provided\s+)?"
    r"(documents?|sources?|passages?|context)\b"
    r"|\b(cannot|can't|unable\s+to)\s+(find|answer)\b[^.]{0,60}?\b(documents?|sources?)\b",
    re.IGNORECASE,
)


def model_verdict(answer: str, cited: set[int]) -> Verdict | None:
    """ "declined" when the model's reply cites nothing and says the documents do not hold the answer."""
    if cited:
        return None
    text = answer.strip()
    if not text:
        return None
    if any(sentence in text for sentence in _FIXED):
        return "declined"
    return "declined" if _ZH.search(text) or _EN.search(text) else None
