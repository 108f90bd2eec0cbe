"""Compound questions: 2-4 development-set questions about different documents joined into one request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backend.text import detect_lang

# How the parts are joined, in turn: plain sentences, then the joiners a user writes.
ZH_JOINERS = ("", "另外，", "还有，", "以及，")
EN_JOINERS = (" ", " Also, ", " And ", " Additionally, ")
SIZES = (2, 3, 4)


@dataclass(frozen=True)
class Component:
    qid: str
    question: str
    golds: list[str]  # gold answer strings
    gold_docs: list[str]  # qrels


@dataclass(frozen=True)
class Compound:
    text: str
    components: list[Component]


def build_compounds(
    ids: Sequence[str],
    texts: Mapping[str, str],
    answers: Mapping[str, list[str]],
    qrels: Mapping[str, Mapping[str, int]],
    count: int,
) -> list[Compound]:
    """`count` compounds from `ids` in order (a deterministic sample), sized 2, 3, 4, 2, ...; a
    question whose gold document is already in the compound being filled waits for the next one."""
    compounds: list[Compound] = []
    waiting: list[str] = []
    pending = list(ids)
    while len(compounds) < count and (pending or waiting):
        size = SIZES[len(compounds) % len(SIZES)]
        parts: list[Component] = []
        docs: set[str] = set()
        queue, waiting = [*waiting, *pending], []
        pending = []
        for k, qid in enumerate(queue):
            gold_docs = sorted(qrels.get(qid, {}))
            if len(parts) == size:
                pending = queue[k:]
                break
            if not gold_docs or docs & set(gold_docs):
                waiting.append(qid)
                continue
            docs |= set(gold_docs)
            parts.append(Component(qid, _as_question(texts[qid]), answers[qid], gold_docs))
        if len(parts) < 2:
            break
        compounds.append(Compound(join([p.question for p in parts], len(compounds)), parts))
    return compounds


def join(questions: Sequence[str], index: int) -> str:
    zh = detect_lang(questions[0]) == "zh"
    joiners = ZH_JOINERS if zh else EN_JOINERS
    text = questions[0]
    for k, question in enumerate(questions[1:]):
        joiner = joiners[(index + k) % len(joiners)]
        text += joiner + (question if zh or not joiner.strip() else _lower_first(question))
    return text


def _as_question(text: str) -> str:
    text = text.strip()
    if text.endswith(("?", "？")):
        return text
    return text + ("？" if detect_lang(text) == "zh" else "?")


def _lower_first(text: str) -> str:
    """ "Also, how ..." reads as a sentence; a name ("Also, Jared Allen ...") keeps its capital."""
    first = text.split(" ", 1)[0]
    if first.lower() in {"how", "what", "who", "whom", "whose", "which", "when", "where", "why", "in", "the"}:
        return text[0].lower() + text[1:]
    return text
