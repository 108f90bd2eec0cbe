"""A question that asks for one thing, and that thing in a text, without a model (the heuristic form
of the seed's FormatAnswer): what kind of thing a question asks for — a person, a date, a number, a
yes or no, a named entity — and a thing of that kind taken from the sentences of the evidence that
name the most anchors of the question. None: an open question (why, how, describe, compare), whose
answer is a text, not one line; or nothing of the kind was found."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import jieba.posseg

from backend.text.names import DOTTED_NAME, EN_NAME, EN_NOT_NAMES, TITLE, anchor_count, anchor_terms

MAX_ANSWER_CHARS = 80

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
            r"哪一?[个個家国國座部支种種里裡儿兒所条條位本首款项項]|哪一|哪里|哪裡|叫什么|叫什麼|什么名字|什麼名字|是哪"
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
        # Mid-sentence only a lower-case "who": "What Doctor Who was written…" names a title.
        re.compile(
            r"(?i:(?:^|[:：]\s*)who(?:m|se)?\b)|\bwho (?:is|was|were|are|did|won|wrote|founded|invented)\b"
        ),
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


# The period of an honorific ("Mr. Smith") ends no sentence.
_SENTENCE = re.compile(
    r"(?<=[。！？!?；;])|(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bProf\.)(?<=[.])\s+|\n+"
)
# A title before a name is not the name ("Mr. Smith" -> Smith; "Dr" alone names no one); nor is a
# Chinese form of address alone (先生, 女士, 博士...).
_EN_HONORIFIC = re.compile(r"^(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Madam|Mme|St|Rev|Lord|Lady)\b\.?\s*")
_ZH_HONORIFIC = frozenset(
    "先生 女士 小姐 太太 夫人 博士 教授 老师 老師 同志 阁下 閣下 大人 师傅 師傅 医生 醫生 "
    "总统 總統 主席".split()
)
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATES = (
    re.compile(r"(?:公元前?)?\d{1,4}年(?:\d{1,2}月)?(?:\d{1,2}[日号])?"),
    re.compile(
        rf"\b{_MONTHS}\s+\d{{1,2}},\s+\d{{4}}\b|\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}\b|\b{_MONTHS}\s+\d{{4}}\b"
    ),
    re.compile(r"\b1\d{3}\b|\b20\d{2}\b"),
)
_ZH_UNITS = (
    "平方公里|平方米|立方米|摄氏度|小时|分钟|公里|公斤|千米|厘米|毫米|千克|美元|美金|英镑|欧元|日元|港元|人民币|"
    "世纪|个月"
)
# A separator belongs to a number only between digits: "3，Anti" is a 3, not "3，Anti".
_ZH_NUMBER = re.compile(
    rf"\d+(?:[,，.]\d+)*\s*(?:万|亿|千|百)?(?:[%％]|{_ZH_UNITS}|[a-zA-Z]+|[\u4e00-\u9fff])?"
)
_EN_NUMBER = re.compile(
    r"\d+(?:[,.]\d+)*(?:\s*(?:%|percent|million|billion|thousand|hundred))?(?:\s+[a-z]+)?"
)
_ZH_NUMERALS = "零一二两三四五六七八九十百千万亿"
# nz too for a person: jieba tags many a transliterated name so (君士坦丁); the anchors pick among them.
_NAME_TAGS = {"who": ("nr", "nz"), "entity": ("nr", "ns", "nt", "nz")}


def extract_answer(question: str, kind: QuestionType, texts: Sequence[str]) -> str | None:
    """A thing of the kind asked (not yes/no: that needs a model) from the three sentences of `texts`
    naming the most anchors of `question` (the earlier on ties), normalised; None when none holds one."""
    if kind == "yesno":
        return None
    anchors = anchor_terms(question)
    sentences = [" ".join(s.split()) for t in texts for s in _SENTENCE.split(t) if s and s.strip()]
    ranked = sorted(sentences, key=lambda s: -anchor_count(s, anchors))  # stable: evidence order
    for sentence in ranked[:3]:
        found = _extract(kind, sentence, question, anchors)
        if found:
            return normalise_answer(found)
    return None


def normalise_answer(text: str) -> str:
    """One line, without surrounding punctuation or emphasis, at most MAX_ANSWER_CHARS."""
    text = " ".join(text.split()).strip(" ，,。.;；:：、*_`")
    return text[:MAX_ANSWER_CHARS]


_ASKED_UNIT = re.compile(r"(?:多少|几|幾)([\u4e00-\u9fff])|\bhow (?:many|much) (\w+)", re.IGNORECASE)
_DATE_LIKE = re.compile(
    r"^(?:1\d{3}|20\d{2})(?:\s*(?:年|赛季|賽季|年度))?[\u4e00-\u9fff]?$|[年月日号號]$|赛$|賽$"
)


def _numbers(found: list[str], question: str) -> list[str]:
    """Numbers in the unit the question asks in first (多少分 -> 308分), dates and years last."""
    asked = _ASKED_UNIT.search(question)
    unit = next((g for g in asked.groups() if g), "") if asked else ""
    unit = unit.rstrip("s").lower()
    return sorted(found, key=lambda v: (not (unit and unit in v.lower()), bool(_DATE_LIKE.search(v))))


def _extract(kind: QuestionType, sentence: str, question: str, anchors: Sequence[str] = ()) -> str | None:
    def new(values: Sequence[str]) -> str | None:
        return next((v for v in values if v.strip() and v.strip() not in question), None)

    if kind == "when":
        for pattern in _DATES:
            value = new([m.group() for m in pattern.finditer(sentence)])
            if value:
                return value
        return None
    if kind == "number":
        zh = re.search(r"[\u4e00-\u9fff]", sentence)
        pattern = _ZH_NUMBER if zh else _EN_NUMBER
        found = [m.group().strip() for m in pattern.finditer(sentence)]
        asked = _ASKED_UNIT.search(question)
        if zh and asked and asked.group(1):  # 几类 -> 两类: Chinese numerals, in the unit asked only
            found += re.findall(rf"[{_ZH_NUMERALS}]+{re.escape(asked.group(1))}", sentence)
        return new(_numbers(found, question))
    names = [t for t in TITLE.findall(sentence)] if kind == "entity" else []
    names += DOTTED_NAME.findall(sentence)
    english = [
        _EN_HONORIFIC.sub("", m.group().strip())
        for m in EN_NAME.finditer(sentence)
        # a sentence's capitalised first word alone is not a name ("After leaving…")
        if m.group().split()[0] not in EN_NOT_NAMES and not (m.start() == 0 and len(m.group().split()) == 1)
    ]
    # A person or a team is named in full ("Robert Lane") more often than a passing mention ("Edison's").
    names += sorted((n for n in english if n), key=lambda n: len(n.split()) < 2)
    if re.search(r"[\u4e00-\u9fff]", sentence):
        tags = _NAME_TAGS.get(kind, ("nr",))
        names += [p for p in _proper_phrases(sentence, tags) if p not in _ZH_HONORIFIC]
    return new(nearest_first(names, sentence, [a for a in anchors if a not in names]))


def nearest_first(names: Sequence[str], sentence: str, anchors: Sequence[str]) -> list[str]:
    """`names` with those nearest the question's anchors in `sentence` first: a passage names several
    people, and the one that answers stands beside what the question asks about ("…公会议是由君士坦丁
    大帝召开", not the first name of the sentence). A full English name keeps its lead over a passing
    one-word mention; ties keep the order given."""
    lowered = sentence.lower()
    spans = [(m.start(), m.end()) for a in anchors if a for m in re.finditer(re.escape(a.lower()), lowered)]
    if not spans:
        return list(names)

    def distance(name: str) -> int:
        start = lowered.find(name.lower())
        if start < 0:
            return len(sentence)
        end = start + len(name)
        return min(max(a - end, start - b, 0) for a, b in spans)

    english_word = [bool(re.fullmatch(r"[A-Z][\w'’.-]*", n)) for n in names]
    order = sorted(range(len(names)), key=lambda i: (english_word[i], distance(names[i])))
    return [names[i] for i in order]


def _proper_phrases(sentence: str, tags: tuple[str, ...]) -> list[str]:
    """Runs of adjacent nouns holding a proper noun of `tags` (卡罗/莱纳/黑豹/队 -> 卡罗莱纳黑豹队)."""
    phrases: list[str] = []
    run: list[str] = []
    proper = False
    for word, flag in [*jieba.posseg.cut(sentence), ("", "x")]:
        if flag.startswith("n"):
            run.append(word)
            proper = proper or flag.startswith(tags)
            continue
        phrase = "".join(run)
        if proper and len(phrase) >= 2:
            phrases.append(phrase)
        run, proper = [], False
    return phrases


# Negation in the evidence sentence (not in the question's own "是不是"/"有没有"): the evidence says no.
_ZH_NEGATION = re.compile(
    r"不是|并非|並非|没有|沒有|从未|從未|并不|並不|不曾|未曾|未|无法|無法|不(?![同断斷过過少久仅僅但久])"
)
_EN_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|none)\b|n't\b", re.IGNORECASE)
_ZH_ASKING = re.compile(r"是不是|有没有|有沒有|是否|能否|可否|吗|嗎")
MIN_YESNO_ANCHORS = 2


def yes_no_answer(question: str, texts: Sequence[str]) -> str | None:
    """是/否 (Yes/No) with the sentence that says so, when one sentence of `texts` names every anchor of
    the question (at least two): affirmed unless it negates, where the question did not. None when no
    sentence is that clear."""
    anchors = anchor_terms(_ZH_ASKING.sub(" ", question))
    if len(anchors) < MIN_YESNO_ANCHORS:
        return None
    zh = bool(re.search(r"[\u4e00-\u9fff]", question))
    negation = _ZH_NEGATION if zh else _EN_NEGATION
    asked_negated = bool(negation.search(_ZH_ASKING.sub(" ", question)))
    for text in texts:
        for sentence in (" ".join(s.split()) for s in _SENTENCE.split(text) if s and s.strip()):
            if anchor_count(sentence, anchors) < len(anchors):
                continue
            negated = bool(negation.search(sentence)) != asked_negated
            word = ("否" if negated else "是") if zh else ("No" if negated else "Yes")
            evidence = sentence.strip(" 。.")
            return normalise_answer(f"{word}：{evidence}" if zh else f"{word}: {evidence}")
    return None
