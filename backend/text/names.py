"""Names and anchors in questions and passages, without a model: the anchors of a question (its titles,
quoted names and significant words), the names a text holds (an encyclopedia may know them), a list
of candidate names (the seed's 配音演员 list), and how many anchors a passage names (a multi-anchor
hit names several at once)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import jieba.posseg

from backend.text.segment import stopwords, words

MAX_ANCHORS = 6
MAX_LIST = 5  # candidates of one list
TITLE = re.compile(r"《([^》]{1,40})》")
_QUOTED = re.compile(r"[\"“「]([^\"”」]{2,40})[\"”」]")
_INTERROGATIVE = re.compile(
    r"^(?:什么|什麼|谁|誰|哪.{0,2}|几.?|多少|吗|嗎|是否|如何|怎么|怎麼|一[个個位名家种種只隻支座部本首条條项項]|"
    r"what|who|whom|whose|which|when|where|why|how)$",
    re.IGNORECASE,
)
EN_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|van|da|le|la)?\s*[A-Z][\w'’.-]*)*")
EN_NOT_NAMES = frozenset(
    "What Who Whom Whose Which When Where Why How Is Are Was Were Do Does Did Can The A An In On Of "
    "And Also Then This That These Those It".split()
)
# Common Chinese surnames: an enumerated item opening on one reads as a person's name.
SURNAMES = frozenset(
    "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何林罗羅高郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧曹彭曾肖"
    "田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范金石廖贾賈夏韦韋付方白邹鄒孟熊秦"
    "邱江尹薛闫閻段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔向汤湯常温溫康施文牛樊葛邢安齐齊"
    "易乔喬伍庞龐颜顏倪庄莊聂聶章鲁魯岳翟殷詹申欧歐耿关關兰蘭焦俞左柳甘祝包宁寧尚符舒阮柯纪紀梅童凌毕畢"
)
# A transliterated name (约翰·古尔德, 贾里德·艾伦): the middle dot joins nothing else.
# Its parts hold no function character (的作者是约翰·古尔德 -> 约翰·古尔德).
_NAME_CHAR = (
    r"(?:(?![的是在和了有为與与及等之由被把将從从向对對于於也都而就还還其书書者位名叫称稱])[\u4e00-\u9fff])"
)
DOTTED_NAME = re.compile(rf"{_NAME_CHAR}{{1,5}}(?:·{_NAME_CHAR}{{1,8}})+")
_ZH_LIST = re.compile(r"(?:[\u4e00-\u9fff·]{2,4}、){2,}[\u4e00-\u9fff·]{2,4}")
_EN_ITEM = r"[A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+){0,2}"
_EN_LIST = re.compile(rf"(?:{_EN_ITEM},\s){{2,}}(?:and\s)?{_EN_ITEM}(?:,?\sand\s{_EN_ITEM})?")


def keywords(text: str, limit: int = 8) -> list[str]:
    """The text's significant words, unstemmed and in order."""
    stop = stopwords()
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in stop and (len(word) > 1 or not word.isascii()):
            seen.setdefault(word, None)
    return list(seen)[:limit]


def anchor_count(text: str, anchors: Sequence[str]) -> int:
    """How many of `anchors` `text` names (case-insensitive)."""
    lowered = text.lower()
    return sum(1 for a in anchors if a and a.lower() in lowered)


def anchor_terms(question: str) -> list[str]:
    """The sub-question's anchors: titles and quoted names whole, then its significant words."""
    found = [*TITLE.findall(question), *(q for q in _QUOTED.findall(question))]
    terms = keywords(question, limit=12)
    for word in terms:
        # A word inside a longer one of the question (科学 in 科学家) is that one's part, not an anchor.
        inside = any(word != t and word in t for t in terms)
        if not _INTERROGATIVE.match(word) and not inside and not any(word in a for a in found):
            found.append(word)
    return [a for a in dict.fromkeys(found) if len(a) >= 2][:MAX_ANCHORS]


def named_entities(text: str, *, limit: int) -> list[str]:
    """Names in `text` an encyclopedia may hold: titles, English proper names, Chinese names, places,
    organisations (jieba's dictionary tags; the HMM tagger is too slow for every round)."""
    found = [*TITLE.findall(text), *DOTTED_NAME.findall(text)]
    found += [m.group().strip() for m in EN_NAME.finditer(text) if m.group().split()[0] not in EN_NOT_NAMES]
    if re.search(r"[\u4e00-\u9fff]", text):
        found += [
            w
            for w, flag in jieba.posseg.cut(text[:400], HMM=False)
            if len(w) >= 2 and flag[:2] in ("nr", "ns", "nt", "nz")
        ]
    return [e for e in dict.fromkeys(found) if 2 <= len(e) <= 40][:limit]


def candidate_set(question: str, texts: Sequence[str]) -> list[str]:
    """The first list of names in the top evidence (three or more, the seed's 配音演员 list): Chinese
    names joined by 、 opening on a surname, or English capitalised names joined by commas; names the
    question already gives are not candidates."""
    for text in texts:
        for match in _ZH_LIST.finditer(text):
            items = _trim_ends([s.strip("·") for s in match.group().split("、")])
            if all(s[:1] in SURNAMES and len(s) <= 3 for s in items):
                return _new(items, question)
        for match in _EN_LIST.finditer(text):
            items = [s.strip() for s in re.split(r",\s(?:and\s)?|\sand\s", match.group())]
            names = [s for s in items if s and s.split()[0] not in EN_NOT_NAMES]
            if len(names) >= 3:
                return _new(names, question)
    return []


def _trim_ends(items: list[str]) -> list[str]:
    """The list's first item without the words before it (配音演员有范蕾颖 -> 范蕾颖), its last
    without those after it (黄笑嬿等 -> 黄笑嬿)."""
    first = next((items[0][-k:] for k in (3, 2) if len(items[0]) >= k and items[0][-k] in SURNAMES), items[0])
    last = items[-1][:3] if len(items[-1]) > 3 else items[-1]
    return [first, *items[1:-1], last]


def _new(items: list[str], question: str) -> list[str]:
    return [s for s in dict.fromkeys(items) if s and s not in question][:MAX_LIST]
