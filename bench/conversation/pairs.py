"""Follow-up pairs from a development set: two questions about one paragraph, the second's mention of
the article's title replaced by a pronoun (pure functions, no model).

A pair, per paragraph of the ingested half with at least two questions:
- turn 2: the first question (file order) that names the article's title, as a surface form below;
- turn 1: another question about the same paragraph, the first that also names the title if there is
  one (it sets the subject, as a user's first question does), else the first other one;
- the follow-up: turn 2 with the title replaced by a pronoun.

Title surface forms: the title itself, underscores as spaces, without a trailing "(...)" / "（...）"
qualifier (Victoria_(Australia) -> Victoria); English matches ignore case and take a preceding "the";
a Chinese match must start the question or follow punctuation or a function character (的 是 在 和 与
对 于 把 被 将 从 为 让 给 及 或, their traditional forms, and 么 of 什么 / 为什么), so 「简化儒略日」
does not name 儒略日.

Pronoun (a simple rule, read off the gold paragraph):
- Chinese: 他 / 她 when that character stands alone (not 他们 / 她们 / 其他 / 他人) at least twice in the
  paragraph and more often than the other two of 他 / 她 / 它; otherwise 它.
- English: "they" when the title is a plural (its last word ends in "s" but not "ss", "us" or "is");
  else "he" / "she" when he-words (he, him, his, himself) or she-words (she, her, hers, herself) occur at
  least twice and more often than the other two groups (it-words: it, its, itself); otherwise "it". The
  form follows the position: possessive for "X's", subject at the start of the question or after an
  auxiliary verb (did, was, is, ...), object elsewhere; capitalised at the start.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from bench.routing.split import Question, Split

_ZH_HE = re.compile(r"(?<!其)他(?![们們人])")
_ZH_SHE = re.compile(r"她(?![们們])")
_ZH_IT = re.compile(r"它(?![们們])")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ZH_BEFORE = frozenset("的是在和与與对對于於把被将將从從为為让讓给給及或么麼")
_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")
_AUXILIARIES = frozenset(
    "did does do was is were are has have had can could will would should may might must".split()
)
_EN_GROUPS = {
    "he": ("he", "him", "his", "himself"),
    "she": ("she", "her", "hers", "herself"),
    "it": ("it", "its", "itself"),
}
_EN_FORMS = {  # subject, object, possessive
    "he": ("he", "him", "his"),
    "she": ("she", "her", "her"),
    "it": ("it", "it", "its"),
    "they": ("they", "them", "their"),
}


@dataclass(frozen=True)
class Pair:
    set: str
    gold_doc: str
    title: str
    turn1: Question
    turn2: Question  # the original wording
    followup: str  # turn 2 with the title replaced by a pronoun
    pronoun: str
    turn1_names_title: bool


def surface_forms(title: str) -> list[str]:
    """How a question may name the article: longest first."""
    spaced = title.replace("_", " ").strip()
    forms = {spaced, _QUALIFIER.sub("", spaced).strip()}
    return sorted((f for f in forms if f), key=len, reverse=True)


def names_title(question: str, title: str) -> bool:
    return _find(question, title) is not None


def _find(question: str, title: str) -> re.Match[str] | None:
    for form in surface_forms(title):
        if _CJK.search(form):
            match = next(
                (m for m in re.finditer(re.escape(form), question) if _zh_boundary(question, m.start())), None
            )
        else:
            match = re.search(rf"(?i)\b(?:the\s+)?{re.escape(form)}(?:'s|’s)?(?!\w)", question)
        if match:
            return match
    return None


def _zh_boundary(question: str, start: int) -> bool:
    """A Chinese mention starts the question or follows punctuation or a function character."""
    if start == 0:
        return True
    before = question[start - 1]
    return before in _ZH_BEFORE or not (before.isalnum() or _CJK.match(before))


def chinese_pronoun(paragraph: str) -> str:
    counts = {
        "他": len(_ZH_HE.findall(paragraph)),
        "她": len(_ZH_SHE.findall(paragraph)),
        "它": len(_ZH_IT.findall(paragraph)),
    }
    for pronoun in ("他", "她"):
        others = [v for k, v in counts.items() if k != pronoun]
        if counts[pronoun] >= 2 and counts[pronoun] > max(others):
            return pronoun
    return "它"


def english_pronoun(title: str, paragraph: str) -> str:
    last = surface_forms(title)[-1].split()[-1].lower() if surface_forms(title) else ""
    if last.endswith("s") and not last.endswith(("ss", "us", "is")):
        return "they"
    words = re.findall(r"[a-z]+", paragraph.lower())
    counts = {group: sum(words.count(w) for w in forms) for group, forms in _EN_GROUPS.items()}
    for pronoun in ("he", "she"):
        others = [v for k, v in counts.items() if k != pronoun]
        if counts[pronoun] >= 2 and counts[pronoun] > max(others):
            return pronoun
    return "it"


def pronoun_for(title: str, question: str, paragraph: str) -> str:
    return chinese_pronoun(paragraph) if _CJK.search(question) else english_pronoun(title, paragraph)


def replace_title(question: str, title: str, pronoun: str) -> str | None:
    """The question with its first mention of the title replaced by the pronoun (None: not named)."""
    match = _find(question, title)
    if match is None:
        return None
    before, after = question[: match.start()], question[match.end() :]
    if pronoun not in _EN_FORMS:
        return before + pronoun + after
    subject, obj, possessive = _EN_FORMS[pronoun]
    previous = re.findall(r"[A-Za-z]+", before)
    if match.group(0).lower().endswith(("'s", "’s")):
        word = possessive
    elif not previous or previous[-1].lower() in _AUXILIARIES:
        word = subject
    else:
        word = obj
    if not before.strip():
        word = word[:1].upper() + word[1:]
    return before + word + after


def build_pairs(split: Split) -> list[Pair]:
    """One pair per paragraph of the ingested half that has a question naming its article (module doc)."""
    rows = {str(r["_id"]): r for r in split.ingested_rows}
    by_paragraph: dict[str, list[Question]] = defaultdict(list)
    for q in split.questions:
        if q.answerable and q.gold_doc in rows:
            by_paragraph[q.gold_doc].append(q)
    pairs = []
    for doc, questions in by_paragraph.items():
        title, text = rows[doc].get("title") or "", rows[doc]["text"]
        if not title or len(questions) < 2:
            continue
        second = next((q for q in questions if names_title(q.text, title)), None)
        if second is None:
            continue
        others = [q for q in questions if q is not second]
        first = next((q for q in others if names_title(q.text, title)), others[0])
        pronoun = pronoun_for(title, second.text, text)
        followup = replace_title(second.text, title, pronoun)
        if followup is None or followup == second.text:
            continue
        pairs.append(
            Pair(
                split.dataset.name,
                doc,
                title,
                first,
                second,
                followup,
                pronoun,
                names_title(first.text, title),
            )
        )
    return pairs
