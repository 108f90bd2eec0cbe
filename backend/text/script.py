"""Simplified <-> traditional forms of the characters the stopword list uses, so each listed word is
dropped in both scripts (drcd's questions are traditional, cmrc2018's simplified).

A character map, not a converter: it covers the characters of backend/text/stopwords.txt that differ
between the scripts (checked against OpenCC's s2t / t2s tables when written). A word's other forms are
the word in simplified and in traditional script; a character with two traditional forms (里: 裡 in
Taiwan, 裏 in Hong Kong) gives both. Only the function-word senses are mapped (干 as in 干什么 -> 幹, not 乾).
"""

from __future__ import annotations

from itertools import product

# simplified -> its traditional form(s); a character absent here is the same in both scripts.
SIMPLIFIED_TO_TRADITIONAL: dict[str, str] = {
    "与": "與",
    "个": "個",
    "为": "為",
    "么": "麼",
    "从": "從",
    "们": "們",
    "会": "會",
    "体": "體",
    "儿": "兒",
    "关": "關",
    "内": "內",
    "几": "幾",
    "则": "則",
    "别": "別",
    "后": "後",
    "吗": "嗎",
    "并": "並",
    "实": "實",
    "对": "對",
    "将": "將",
    "干": "幹",
    "应": "應",
    "时": "時",
    "来": "來",
    "样": "樣",
    "没": "沒",
    "经": "經",
    "给": "給",
    "着": "著",
    "种": "種",
    "称": "稱",
    "虽": "雖",
    "让": "讓",
    "诉": "訴",
    "话": "話",
    "该": "該",
    "说": "說",
    "请": "請",
    "谁": "誰",
    "较": "較",
    "过": "過",
    "还": "還",
    "这": "這",
    "进": "進",
    "里": "裡裏",
    "间": "間",
    "问": "問",
    "于": "於",
    "够": "夠",
    "据": "據",
}

TRADITIONAL_TO_SIMPLIFIED: dict[str, str] = {
    trad: simp for simp, trads in SIMPLIFIED_TO_TRADITIONAL.items() for trad in trads
}


def to_simplified(word: str) -> str:
    """The word with its mapped traditional characters in simplified form."""
    return "".join(TRADITIONAL_TO_SIMPLIFIED.get(char, char) for char in word)


def to_traditional(word: str) -> set[str]:
    """The word's traditional form(s): one per combination of its characters' traditional forms."""
    simplified = to_simplified(word)
    return {"".join(chars) for chars in product(*(SIMPLIFIED_TO_TRADITIONAL.get(c, c) for c in simplified))}


def script_forms(word: str) -> set[str]:
    """The word, its simplified form and its traditional form(s) (a word with no mapped character is its
    only form). Mixed-script spellings are not made: no text writes 這个."""
    return {word, to_simplified(word), *to_traditional(word)}
