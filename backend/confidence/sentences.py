"""Sentence-level evidence: the question's answer type against what a passage's sentences hold.

A passage on the question's topic that does not answer it (a near miss) shares the question's words
and meaning as an answer does; what it lacks is the answer itself. Without a model two cheap signals
are left (issue 26 item 2), both read off whole sentences rather than the whole chunk:

  answer type   what the question asks for, from its question words: a number (多少 / 几 / 多大 /
                how many / how much), a date (何时 / 什么时候 / 哪一年 / when / what year), a person
                (谁 / 哪位 / who), a place (哪里 / 哪个国家 / where / which country). Untyped: None.
  sentence      the sentences carrying the question's terms (idf-weighted share of them within ONE
                sentence: a near miss spreads them over sentences about something else), and whether
                the best of them holds something of the asked type that is not the question's own
                words (a number besides the question's "1964", a date, a person- or place-like name).
                A number question naming its measure (多少米, 几条, how many people) wants a number
                counted in it (3000米, 68万人, 680,000 people): any number will not do — an
                encyclopaedia's sentences are full of years and counts of other things.
Only number and date questions hold a passage to their type (SCORED_TYPES): the person and place
detection below is reported in the diagnostics but does not separate near misses (docs/routing.md).

Types are found by regular expressions (digits, Chinese numerals with a measure word, years, months,
centuries, dynasties, capitalised names) and jieba's dictionary POS tags of words of two or more
characters (nr person, ns place; HMM off: the HMM tagger takes ~1 s per Traditional Chinese paragraph,
the dictionary lookup ~1 ms). No model; only the sentences that carry the question's terms are tagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import jieba.posseg

from backend.text import normalize
from backend.text.segment import stem

QUESTION_TYPES = ("number", "date", "person", "place")
# The types the answer_type feature holds a passage to. Person and place are read and reported, but
# without a tagger their detection marks most sentences of an encyclopaedia (a capitalised word, a
# dictionary name) whatever the question: on the development sets' near misses the best sentence of
# the passage that does not answer held them as often as the answer's did (docs/routing.md).
SCORED_TYPES = ("number", "date")
HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN = re.compile(f"[{HAN}]")
_ALL_HAN = re.compile(f"^[{HAN}]+$")

# Question words, most specific first: "哪一年" asks a date before "几" makes it a number.
_ZH_QUESTION = (
    (
        "date",
        r"何时|何時|[什甚]么时候|[什甚]麼時候|[什甚]么时间|[什甚]麼時間|哪一?年|何年|哪一?天|哪一?日|[几幾]月|[几幾][号號日]"
        r"|哪[个個]?世[纪紀]|[几幾]世[纪紀]|哪[个個一]?朝代|[什甚][么麼]年代|哪[个個]?年代|哪[个個]?[时時]期|[什甚][么麼][时時]期|多久以前",
    ),
    (
        "number",
        r"多少|[几幾](?!乎)|多大|多[长長]|多高|多[远遠]|多重|多久|多深|多[宽寬]|多快|多老|多厚|多少[钱錢]|百分之[几幾]",
    ),
    ("person", r"[谁誰]|哪一?位|何人|[什甚][么麼]人|哪[个個]人|哪些人"),
    (
        "place",
        r"哪[里裡裏儿兒]|何[处處]|何地|在哪(?![一个個些年天位座种種条條])|哪[个個]?[国國]家?|哪[个個座]?城市|哪[个個]?[省州县縣]|[什甚][么麼]地方"
        r"|哪[个個]?地[区區]|哪[个個]?大[洲陆陸]",
    ),
)
_EN_QUESTION = (
    (
        "date",
        r"\bwhen\b|\b(?:what|which) (?:year|date|day|month|century|decade|era|period|time period)\b"
        r"|\bhow long ago\b",
    ),
    (
        "number",
        r"\bhow (?:many|much|long|old|far|large|big|high|tall|deep|wide|often|fast|heavy)\b"
        r"|\bwhat (?:percentage|percent|proportion|fraction|number|amount|size|population)\b",
    ),
    ("person", r"\bwho\b|\bwhom\b|\bwhose\b"),
    (
        "place",
        r"\bwhere\b|\b(?:what|which) (?:country|city|state|region|continent|province|town|county|island"
        r"|place|location)\b",
    ),
)
_QUESTION = tuple(
    (kind, re.compile(f"(?:{zh})|(?:{en})", re.IGNORECASE))
    for (kind, zh), (_, en) in zip(_ZH_QUESTION, _EN_QUESTION, strict=True)
)

_ZH_NUMERAL = "零〇一二三四五六七八九十两兩百千万萬亿億"
_ZH_NUMERAL_NOT_ONE = _ZH_NUMERAL.replace("一", "")
_MEASURE = (
    "个個位名人次年月日天种種件条條只隻座项項场場倍元米里克吨噸岁歲%度户戶家所间間层層部本张張台臺辆輛"
    "届屆队隊支门門首篇块塊分秒公英平艘架棵匹头頭枚册冊卷章集季代"
)
_NUMBER = re.compile(
    # a lone 一 before a measure word is an article ("一种方法"), not a number; 十分 / 千万 / 万一 are words
    rf"\d|百分之|(?!十分|千[万萬]|[万萬]一|一一)(?:[{_ZH_NUMERAL}]{{2,}}|[{_ZH_NUMERAL_NOT_ONE}][多余餘]?[{_MEASURE}])"
    r"|[数數][十百千万萬]"
    r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty"
    r"|sixty|seventy|eighty|ninety|hundreds?|thousands?|millions?|billions?|trillions?|dozens?|half)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    rf"\d{{1,4}}\s*[年月日号號]|[〇零一二三四五六七八九十]{{1,4}}[年月]|世[纪紀]|年代|[公西]元|[{HAN}][朝代](?:[时時]期|年[间間])?"
    r"|[时時]期|年[间間]|[春夏秋冬][季天]|[早中晚]期|初年|末年"
    r"|\b1\d{3}s?\b|\b20\d{2}s?\b|\b\d{1,4}\s*(?:bc|ad|bce|ce)\b|\bcentur(?:y|ies)\b|\bdecades?\b"
    r"|\b(?:january|february|march|april|june|july|august|september|october|november|december)\b"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
# A transliterated name (让-皮埃尔·巴利冈) or a title next to a name.
_ZH_PERSON = re.compile(
    rf"[{HAN}]+[·•‧・][{HAN}]+|(?:先生|女士|教授|博士|[国國]王|皇帝|[总總][统統]|主席|[将將][军軍]|作家|[导導]演|[演]員|演员"
    r"|首相|[总總]理|王子|公主|皇后|太子|大帝|[创創]始人|作者|[发發]明家|[医醫]生|[总總][监監]|[经經]理|[书書]?[记記]|部[长長])"
)
_ZH_PLACE = re.compile(
    rf"[{HAN}]{{1,6}}(?:省|[县縣]|[区區]|州|[岛島]|半[岛島]|山[脉脈]?|河|江|湖|海|洋|洲|城|[镇鎮]|村|港|[湾灣]|盆地|平原|高原|沙漠)"
)
# A capitalised word that does not start its sentence (or two in a row anywhere): a name.
_EN_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:[\s-][A-Z][a-z]+)*|\b[A-Z][a-z]+\s+[A-Z][a-z]+")
_EN_NOT_NAMES = frozenset(
    "The A An In On At Of For And But Or It Its This That These Those He She They His Her Their We "
    "I As By From With To After Before During When While Where Which Who What However Although".split()
)
_SENTENCE_END = re.compile(r"(?<=[。!?;])|(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_LATIN_WORD = re.compile(r"[a-z0-9]+")


def question_type(text: str) -> str | None:
    """What the question asks for: 'number', 'date', 'person', 'place', or None (untyped)."""
    normalized = normalize(text)
    found = [(m.start(), i, kind) for i, (kind, rx) in enumerate(_QUESTION) if (m := rx.search(normalized))]
    # The first question word names the type ("谁在哪一年..." asks a person); ties: the list's order.
    return min(found)[2] if found else None


_ZH_UNIT_AFTER = re.compile(rf"(?:多少|[几幾](?!乎))([{HAN}])")
_EN_UNIT_AFTER = re.compile(r"\bhow many ([a-z]+)", re.IGNORECASE)
# What a number is counted in when the question names no measure of its own (多少钱 -> 元).
_ZH_UNIT_ALIASES = {"钱": "元块塊圆圓美镑鎊", "錢": "元块塊圆圓美镑鎊", "岁": "岁歲", "歲": "岁歲"}
_NOT_UNITS = frozenset("的是在了呢吗嗎啊呀和与與")
_EN_NUMBER_WORD = (
    r"\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty"
    r"|sixty|seventy|eighty|ninety|hundreds?|thousands?|millions?|billions?|dozens?|several"
)


def question_unit(text: str) -> str | None:
    """The measure a number question counts in, when it names one: 多少米 -> 米, 几条 -> 条,
    how many people -> people (stemmed); else None (多大, how much: any number answers)."""
    normalized = normalize(text)
    if m := _ZH_UNIT_AFTER.search(normalized):
        unit = m.group(1)
        return None if unit in _NOT_UNITS else unit
    if m := _EN_UNIT_AFTER.search(normalized):
        return stem(m.group(1).lower())
    return None


def holds_counted(sentence: str, unit: str, own: Iterable[str]) -> bool:
    """A number counted in `unit` that is not one of the question's own numbers: 68万人, 680,000 people."""
    own_numbers = {t for t in own if t.replace(",", "").replace(".", "").isdigit()}
    if _HAN.search(unit):
        units = _ZH_UNIT_ALIASES.get(unit, unit)
        pattern = rf"(\d[\d,.]*|[{_ZH_NUMERAL}]+)\s*[多余餘]?[十百千万萬亿億]?\s*[{units}]"
        return any(m.group(1) not in own_numbers for m in re.finditer(pattern, sentence))
    words = sentence.lower().split()
    for i, word in enumerate(words):
        number = word.strip(",.;:()")
        if re.fullmatch(_EN_NUMBER_WORD, number) and number not in own_numbers:
            following = [stem(re.sub(r"[^a-z]", "", w)) for w in words[i + 1 : i + 4]]
            if any(f and (f.startswith(unit) or unit.startswith(f)) for f in following):
                return True
    return False


@lru_cache(maxsize=20_000)
def split_sentences(text: str) -> tuple[str, ...]:
    """A passage's sentences (Chinese and Latin end marks, line breaks), normalised, non-empty."""
    return tuple(s.strip() for s in _SENTENCE_END.split(normalize(text)) if s and s.strip())


@lru_cache(maxsize=50_000)
def _sentence_words(sentence: str) -> frozenset[str]:
    """The stems of a sentence's Latin words and digit runs (what a Latin query term is compared to)."""
    return frozenset(stem(w) for w in _LATIN_WORD.findall(sentence.lower()))


def contains(sentence: str, term: str) -> bool:
    """A question term in one sentence: Chinese terms as text, Latin terms and numbers as word stems."""
    if _HAN.search(term):
        return term in sentence.lower()
    return term in _sentence_words(sentence)


def strip_terms(sentence: str, terms: Iterable[str]) -> str:
    """The sentence without the question's own words (its "1964" is no answer to "how many")."""
    out = sentence
    for term in sorted(terms, key=len, reverse=True):
        if _HAN.search(term):
            out = re.sub(re.escape(term), " ", out, flags=re.IGNORECASE)
        else:
            # not \b: a CJK character is a word character too ("1964年")
            out = re.sub(rf"(?<![a-z0-9]){re.escape(term)}[a-z]*(?![a-z0-9])", " ", out, flags=re.IGNORECASE)
    return out


@lru_cache(maxsize=50_000)
def sentence_types(text: str) -> frozenset[str]:
    """Which answer types the text holds (see the module docstring)."""
    held = set()
    if _NUMBER.search(text):
        held.add("number")
    if _DATE.search(text):
        held.add("date")
    if _ZH_PERSON.search(text):
        held.add("person")
    if _ZH_PLACE.search(text):
        held.add("place")
    names = [m.group() for m in _EN_NAME.finditer(text) if m.group().split()[0] not in _EN_NOT_NAMES]
    if names:  # without a tagger an English name may be a person or a place
        held.update(("person", "place"))
    if _HAN.search(text) and not {"person", "place"} <= held:
        held.update(_zh_name_types(text))
    return frozenset(held)


def _zh_name_types(text: str) -> set[str]:
    """Person / place from jieba's dictionary tags of words of two or more characters (nr person, ns
    place), HMM off: jieba.posseg's HMM tagger takes ~1 s per Traditional Chinese paragraph, the
    dictionary ~1 ms. (Taking every word the dictionary lacks as a name marks nearly every Traditional
    Chinese sentence: tried, no signal left.)"""
    held: set[str] = set()
    for word, flag in jieba.posseg.cut(text, HMM=False):
        if len(word) >= 2 and flag.startswith("nr"):
            held.add("person")
        elif len(word) >= 2 and flag.startswith("ns"):
            held.add("place")
    return held


@dataclass(frozen=True)
class SentenceEvidence:
    """One document's sentence-level evidence for one question."""

    sentence_coverage: float  # the largest idf-weighted share of the comparable terms within one sentence
    answer_type: float  # 1: no scored type asked (SCORED_TYPES), or the best sentences hold it; 0: not
    answer_sentence: float  # the sentence coverage of the best sentence holding the type (untyped: as above)
    asked: str | None = None  # the question's type (QUESTION_TYPES) or None


WINDOW = 2  # the best-covering sentences whose content is read for the answer type


def sentence_evidence(
    texts: Sequence[str],
    weights: Mapping[str, float],
    asked: str | None,
    language_terms: Sequence[str],
    unit: str | None = None,
) -> SentenceEvidence:
    """Score a document's sentences (of its scored chunks' `texts`) against the question.

    weights: every question term's weight; language_terms: those the document's language can hold
    (comparable_terms). With no comparable term (a Chinese question over English text without a
    number or a name in it) the type is read over the first chunk's sentences. unit: the measure a
    number question names (question_unit): then only a number counted in it holds the type."""
    return _evidence(tuple(texts), tuple(weights.items()), asked, tuple(language_terms), unit)


@lru_cache(maxsize=200_000)  # the benchmark's fit scores each stored search under many policies
def _evidence(
    texts: tuple[str, ...],
    weight_items: tuple[tuple[str, float], ...],
    asked: str | None,
    language_terms: tuple[str, ...],
    unit: str | None,
) -> SentenceEvidence:
    weights = dict(weight_items)
    total = sum(weights[t] for t in language_terms)
    ranked: list[tuple[float, int, str]] = []
    for text in texts:
        for sentence in split_sentences(text):
            held = sum(weights[t] for t in language_terms if contains(sentence, t))
            ranked.append((held / total if total > 0 else 0.0, len(ranked), sentence))
    if not ranked:
        return SentenceEvidence(0.0, 0.0 if asked in SCORED_TYPES else 1.0, 0.0, asked)
    ranked.sort(key=lambda r: (-r[0], r[1]))
    best = ranked[0][0]
    if asked not in SCORED_TYPES:
        return SentenceEvidence(best, 1.0, best, asked)
    terms = list(weights)
    window = [r for r in ranked if r[0] > 0][:WINDOW] or [
        r for r in ranked if r[2] in split_sentences(texts[0])
    ][: WINDOW + 1]

    def holds(sentence: str) -> bool:
        if asked == "number" and unit is not None:
            return holds_counted(sentence, unit, terms)
        return asked in sentence_types(strip_terms(sentence, terms))

    typed = any(holds(s) for _c, _i, s in window)
    answer_sentence = next((c for c, _i, s in ranked if c > 0 and holds(s)), 0.0)
    return SentenceEvidence(best, float(typed), answer_sentence, asked)
