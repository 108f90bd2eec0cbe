"""What kind of thing a question asks for, when it asks for one thing: a person, a date, a number, a
yes or no, or a named entity (seed FormatAnswer). None: an open question (why, how, describe, compare),
whose answer is the report itself, not one line."""

from __future__ import annotations

import re
from typing import Literal

QuestionType = Literal["who", "when", "number", "yesno", "entity"]

# Order matters: "哪一年" is a date, "多少人" a number, "是谁" a person; "是否" before the rest.
_ZH: tuple[tuple[QuestionType, re.Pattern[str]], ...] = (
    (
        "when",
        re.compile(
            r"什么时候|什麼時候|何时|何時|哪一?年|哪一?天|哪一?月|几月|幾月|几号|幾號|什么时间|什麼時間|何年|哪个朝代|哪個朝代"
        ),
    ),
    (
        "number",
        re.compile(
            r"多少|几[个位名次岁年天种条只件座人项部届]|幾[個位名次歲年天種條隻件座人項部屆]|多大|多长|多長|多高|多重|多远|多遠|多久|多深|多宽|多寬|几|幾"
        ),
    ),
    ("who", re.compile(r"谁|誰|哪位|哪一位|什么人|什麼人")),
    ("yesno", re.compile(r"是否|是不是|有没有|有沒有|能否|可否|吗[？?]?$|嗎[？?]?$")),
    (
        "entity",
        re.compile(
            r"哪[个個家国國座部支种種里裡儿兒所条條位本首款项項]|哪里|哪裡|叫什么|叫什麼|什么名字|什麼名字|是哪"
        ),
    ),
)
_EN: tuple[tuple[QuestionType, re.Pattern[str]], ...] = (
    ("when", re.compile(r"^\s*when\b|\bwhat (?:year|date|day|month|century)\b|\bin which year\b", re.I)),
    (
        "number",
        re.compile(r"\bhow (?:many|much|long|old|far|tall|high|big|large|deep)\b|\bwhat percentage\b", re.I),
    ),
    (
        "who",
        re.compile(r"^\s*who(?:m|se)?\b|\bwho (?:is|was|were|are|did|won|wrote|founded|invented)\b", re.I),
    ),
    (
        "yesno",
        re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I),
    ),
    (
        "entity",
        re.compile(r"^\s*(?:which|where)\b|\bwhat is the name\b|\bwhat (?:city|country|company)\b", re.I),
    ),
)
_OPEN = re.compile(
    r"为什么|為什麼|为何|為何|怎么|怎麼|如何|介绍|介紹|说明|說明|解释|解釋|比较|比較|分析|总结|總結|"
    r"\bwhy\b|\bhow (?:do|does|did|is|are|can|to)\b|\bdescribe\b|\bexplain\b|\bcompare\b",
    re.IGNORECASE,
)


def question_type(question: str) -> QuestionType | None:
    """The kind of single fact `question` asks for, or None when it asks for an explanation."""
    text = " ".join(question.split())
    if not text or _OPEN.search(text):
        return None
    is_zh = bool(re.search(r"[\u4e00-\u9fff]", text))
    for kind, pattern in _ZH if is_zh else _EN:
        if pattern.search(text):
            return kind
    return None


def asks_for_a_name(question: str) -> bool:
    """Whose answer is one of several names (a candidate set is worth checking one by one)."""
    return question_type(question) in ("who", "entity")
