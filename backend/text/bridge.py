"""A multi-hop question without a model: a part that names the *answer* of the part before it by a
pointing phrase ("陆特和汉斯雷顿开创了哪一地区对梵语的研究？该地区最大的河流是哪一条？", "Who
founded X? Where was that person born?"). The phrase is a demonstrative with the noun the earlier
part asks for (哪一地区 -> 该地区, which company -> that company; who -> 此人, that person): the words
a reader takes for "the thing just asked for", and the ones to replace with that answer once found.

A bare pronoun ("他效力于哪支球队？") is not a bridge: it usually points at what the earlier part
names, and heuristic_plan resolves it to that.
"""

from __future__ import annotations

import re

from backend.text.answers import question_type

_ZH_DEMONSTRATIVE = "(?:该|該|此|这|這|那)"
_ZH_CLASSIFIER = "(?:一|个|個|位|家|座|支|所|条|條|部|本|首|款|种|種|名|项|項|间|間|只|隻)?"
# The noun an interrogative asks for: 哪一个国家 -> 国家, 哪一地區 -> 地區, 哪家公司 -> 公司.
_ZH_ASKED = re.compile(
    r"哪(?:一)?(?:个|個|位|家|座|支|所|条|條|部|本|首|款|种|種|名|项|項|间|間|只|隻)?([\u4e00-\u9fff]{1,3})"
)
_ZH_WHO_NOUNS = ("人物", "人", "位", "名")
_EN_ASKED = re.compile(r"\b(?:what|which)\s+([a-z]+)\b", re.IGNORECASE)
_EN_WHO_NOUNS = ("person", "man", "woman", "people")
_EN_WHERE_NOUNS = ("place", "city", "country", "location")
_EN_DEMONSTRATIVE = r"\b(?:that|this|the same|the said)\s+"
_EN_NOT_NOUNS = frozenset({"is", "was", "are", "were", "do", "does", "did", "the", "a", "an", "of"})


def bridge_phrase(previous: str, part: str) -> str | None:
    """The words of `part` that stand for the answer of `previous` (None: `part` does not need it).
    Only a part after one that asks for a name (who, which X, where) can need its answer."""
    if question_type(previous) not in ("who", "entity"):
        return None
    if re.search(r"[\u4e00-\u9fff]", part):
        return _zh_phrase(previous, part)
    return _en_phrase(previous, part)


def _zh_phrase(previous: str, part: str) -> str | None:
    nouns: list[str] = []
    if re.search(r"谁|誰|哪位|哪一位|什么人|什麼人", previous):
        nouns += _ZH_WHO_NOUNS
    for match in _ZH_ASKED.finditer(previous):
        noun = match.group(1)
        nouns += [noun[:k] for k in range(len(noun), 0, -1)]  # 国家队 -> 国家队, 国家, 国
    for noun in sorted(dict.fromkeys(nouns), key=len, reverse=True):
        found = re.search(f"{_ZH_DEMONSTRATIVE}{_ZH_CLASSIFIER}{re.escape(noun)}", part)
        if found:
            return found.group()
    return None


def _en_phrase(previous: str, part: str) -> str | None:
    nouns: list[str] = []
    if re.search(r"\bwho(?:m|se)?\b", previous, re.IGNORECASE):
        nouns += _EN_WHO_NOUNS
    if re.search(r"\bwhere\b", previous, re.IGNORECASE):
        nouns += _EN_WHERE_NOUNS
    nouns += [
        m.group(1).lower() for m in _EN_ASKED.finditer(previous) if m.group(1).lower() not in _EN_NOT_NOUNS
    ]
    for noun in dict.fromkeys(nouns):
        found = re.search(rf"{_EN_DEMONSTRATIVE}{re.escape(noun)}s?\b", part, re.IGNORECASE)
        if found:
            return found.group()
    return None


def fill_bridge(text: str, phrase: str, answer: str) -> str:
    """`text` with the bridge phrase replaced by the answer found for it (every occurrence)."""
    return text.replace(phrase, answer)
