"""What kind of answer a question asks for, and whether a piece of text offers one (Chinese, English).

Only cheap surface cues: a quantity or date for 多少/几/何时/how many/when, a proper name for 谁/who, a
causal connective for 为什么/why, a place name for 哪里/where. A cue is a small bonus: it breaks near-ties
between sentences that match the question's terms about equally well.
"""

from __future__ import annotations

import re
from enum import Enum


class AnswerType(Enum):
    NUMBER = "number"  # a count, amount, date or time
    PERSON = "person"
    REASON = "reason"  # why, how come, where a name comes from
    PLACE = "place"
    OTHER = "other"


_NUMBER_QUESTION = re.compile(
    r"多少|几|幾|多[大长長久高远遠重深宽寬厚]|何时|何時|什么时候|什麼時候|哪一?年|哪一?天|何年|哪一?[个個]世[纪紀]|"
    r"百分之|[年月]份|日期"
    r"|\bhow\s+(?:many|much|long|old|far|large|big|tall|high|often|fast|heavy|deep|wide)\b"
    r"|\bwhen\b|\b(?:what|which)\s+(?:year|years|date|day|month|century|decade|age|percentage|percent|time|"
    r"number|amount|temperature|period)\b",
    re.IGNORECASE,
)
_PERSON_QUESTION = re.compile(r"谁|誰|哪[位个個]人|何人|\bwho(?:m|se)?\b", re.IGNORECASE)
_REASON_QUESTION = re.compile(
    r"为什么|為什麼|为何|為何|何以|什么原因|什麼原因|怎么会|怎麼會|由来|由來|怎么来|怎麼來|得名"
    r"|\bwhy\b|\bhow come\b|\bwhat (?:caused|causes|led to)\b|\breasons?\b",
    re.IGNORECASE,
)
_PLACE_QUESTION = re.compile(
    r"哪里|哪裡|哪儿|哪兒|何处|何處|何地|在哪|哪[个個一]?(?:地方|地区|地區|国家|國家|城市|省|州)|什[么麼]地方"
    r"|\bwhere\b|\b(?:what|which) (?:country|city|state|region|continent|town|province|island|place)\b",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"因为|因為|由于|由於|因此|所以|故而|以致|导致|導致|原因|为了|為了|得名|源于|源於|源自|以免|之故|故"
    r"|\b(?:because|due to|since|as a result|so that|in order to|therefore|thus|caused|reasons?|led to|"
    r"named (?:after|for)|derived from|owing to)\b",
    re.IGNORECASE,
)
_PLACE = re.compile(
    r"[\u4e00-\u9fff]{1,6}(?:省|市|县|縣|州|国|國|洲|岛|島|山|河|江|湖|海|区|區|镇|鎮|村|城|港|湾|灣|半岛|半島)"
    r"|\b(?:in|at|from|near|to) (?:the )?[A-Z][a-z]+",
)

_EN_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|"
    "thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|thousand|thousands|million|millions|"
    "billion|billions|dozen|half|twice|once|january|february|march|april|june|july|august|september|"
    "october|november|december|century|centuries"
)
# A quantity: digits, an English number or month word, or Chinese numerals bound to a unit or to 年/月/日.
_NUMBER = re.compile(
    rf"\d+|\b(?:{_EN_NUMBER_WORDS})\b|[零一二两兩三四五六七八九十百千万萬亿億]+"
    r"(?=[年月日号號世纪紀个個次名位人种種分秒岁歲倍米公里元台座部场場届屆项項条條])"
    r"|[十百千万萬亿億]",
    re.IGNORECASE,
)
# A proper name: a capitalised word that does not open the text, or a transliterated name (A·B).
_EN_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][a-z]+|(?<=\s)[A-Z]{2,}\b")
_ZH_NAME = re.compile(r"\w+[·・．]\w+")


def answer_type(question: str) -> AnswerType:
    """The kind of answer a question wants, from its wording; OTHER when no cue is found."""
    if _REASON_QUESTION.search(question):
        return AnswerType.REASON
    if _PERSON_QUESTION.search(question):
        return AnswerType.PERSON
    if _NUMBER_QUESTION.search(question):
        return AnswerType.NUMBER
    if _PLACE_QUESTION.search(question):
        return AnswerType.PLACE
    return AnswerType.OTHER


def offers(text: str, kind: AnswerType, question: str) -> bool:
    """Whether text holds an answer of that kind that the question does not already contain."""
    if kind is AnswerType.OTHER:
        return False
    patterns = _PATTERNS[kind]
    found = set().union(*(_found(text, p) for p in patterns))
    asked = set().union(*(_found(question, p) for p in patterns))
    asked_lower = {a.lower() for a in asked} | {w.lower() for w in re.findall(r"\w+", question)}
    return any(f.lower() not in asked_lower for f in found)


_PATTERNS = {
    AnswerType.NUMBER: (_NUMBER,),
    AnswerType.PERSON: (_EN_NAME, _ZH_NAME),
    AnswerType.REASON: (_REASON,),
    AnswerType.PLACE: (_PLACE,),
}


def _found(text: str, pattern: re.Pattern[str]) -> set[str]:
    return {m.group() for m in pattern.finditer(text)}
