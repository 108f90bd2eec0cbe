"""The web-only question set of bench.research --web, built from the development datasets.

Components:
- zh: a Chinese question of cmrc2018-dev (its gold answers, its gold document as a page only Bocha
  finds);
- en: an English question of xquad-en-dev (its gold document as a page only Serper finds);
- entity: "介绍一下<title>" for a cmrc2018-dev document whose title is a pure entity name (that document
  is a Baike entry, not a Bocha page); gold is the entry being cited (no gold string: it asks for an
  introduction, not one fact).
A dataset question leans on its passage ("生命数耗完即算为什么？" names no game); asked of a search engine
it needs its subject, so the document's title is put in front ("泡泡战士：…") when the question does not
already name it. Compounds join 2 or 3 components of different kinds, in the order the `PATTERNS` cycle
gives, each component ending with its question mark (what a user typing several questions writes).
Every other document of both sets is served too (distractors), so a search has to find the right page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from backend.testing.fake_engines import BaikeEntry
from backend.testing.fake_web_corpus import FakePage
from backend.web.routing import is_entity_name
from bench.answers.scoring import load_answers, sample_ids
from bench.common.beir import DatasetsMissing

Kind = Literal["zh", "en", "entity"]
EXPECTED_ENGINE: dict[str, str] = {"zh": "bocha", "en": "serper", "entity": "baike"}
PATTERNS: tuple[tuple[Kind, ...], ...] = (
    ("zh", "en"),
    ("zh", "entity"),
    ("en", "zh", "entity"),
    ("en", "zh"),
    ("entity", "en"),
    ("zh", "en", "zh"),
)
# --single: questions that ask one thing, the answer line's case (issue 30 item 4). An entity part
# ("介绍一下X") asks for an introduction, not one fact, so it is not among them.
SINGLE_PATTERNS: tuple[tuple[Kind, ...], ...] = (("zh",), ("en",))
ZH_SET, EN_SET = "cmrc2018-dev", "xquad-en-dev"


@dataclass(frozen=True)
class WebPart:
    kind: Kind
    qid: str
    question: str
    golds: list[str]  # empty for an entity part
    gold_path: str  # the page (or Baike entry) path on the fake web

    @property
    def engine(self) -> str:
        return EXPECTED_ENGINE[self.kind]


@dataclass(frozen=True)
class WebCompound:
    text: str
    parts: list[WebPart]
    bridge: str | None = None  # a two-hop question: the first hop's answer the second needs


@dataclass
class WebSet:
    compounds: list[WebCompound]
    pages: list[FakePage] = field(default_factory=list)
    entries: list[BaikeEntry] = field(default_factory=list)


def _corpus(path: Path) -> dict[str, dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return {row["_id"]: row for row in map(json.loads, filter(str.strip, fh))}


def _queries(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8") as fh:
        return {row["_id"]: row["text"] for row in map(json.loads, filter(str.strip, fh))}


def _qrels(path: Path) -> dict[str, str]:
    """query id -> its (first) relevant document."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, *_ = line.split("\t")
        out.setdefault(qid, doc)
    return out


def _named(question: str, title: str, lang: str) -> str:
    """The question with its subject: the document title in front unless the question names it."""
    if title.lower() in question.lower():
        return question
    question = question.strip()
    if not question.endswith(("?", "？")):
        question += "？" if lang == "zh" else "?"
    return f"{title}：{question}" if lang == "zh" else f"{title}: {question}"


def _page(doc: dict[str, str], lang: str, engine: str) -> FakePage:
    site = "zh.example.cn" if lang == "zh" else "en.example.org"
    title = doc["title"].replace("_", " ")
    return FakePage(site, doc["_id"], lang, title, (doc["text"],), engines=(engine,))


def build_web_set(datasets_dir: Path, count: int, seed: str, *, single: bool = False) -> WebSet:
    """`count` compounds (and the fake web that answers them) from cmrc2018-dev and xquad-en-dev;
    `single`: one-part questions instead (Chinese and English in turn)."""
    for name in (ZH_SET, EN_SET):
        missing = [
            f
            for f in ("corpus.jsonl", "queries.jsonl", "qrels.tsv", "answers.jsonl")
            if not (datasets_dir / name / f).is_file()
        ]
        if missing:
            raise DatasetsMissing(
                f"bench.research --web needs {datasets_dir / name} with {', '.join(missing)} "
                "(pass --datasets-dir, or set BENCH_DATASETS_DIR)"
            )
    zh_docs = _corpus(datasets_dir / ZH_SET / "corpus.jsonl")
    en_docs = _corpus(datasets_dir / EN_SET / "corpus.jsonl")
    # Entity documents: a title that is a pure name, one per title (Baike has one main sense per name).
    by_title: dict[str, str] = {}
    for doc_id, doc in zh_docs.items():
        if is_entity_name(doc["title"]) and doc["title"] not in by_title:
            by_title[doc["title"]] = doc_id
    entity_ids = sample_ids(sorted(by_title.values()), max(4, count // 2), seed)
    entities = [
        BaikeEntry(9000 + k, zh_docs[d]["title"], "词条", (zh_docs[d]["text"],))
        for k, d in enumerate(entity_ids)
    ]
    queues: dict[Kind, list[WebPart]] = {
        "zh": _parts("zh", datasets_dir / ZH_SET, zh_docs, set(entity_ids), seed),
        "en": _parts("en", datasets_dir / EN_SET, en_docs, set(), seed),
        "entity": [
            WebPart("entity", f"entity:{e.lemma_id}", f"介绍一下{e.title}", [], e.path) for e in entities
        ],
    }
    compounds = []
    for k in range(count):
        patterns = SINGLE_PATTERNS if single else PATTERNS
        pattern = patterns[k % len(patterns)]
        if any(not queues[kind] for kind in pattern):
            break
        parts = [queues[kind].pop(0) for kind in pattern]
        if parts[0].kind == "entity":  # reused: entries are few, questions many
            queues["entity"].append(parts[0])
        compounds.append(WebCompound(_join(parts), parts))
    pages = [_page(d, "zh", "bocha") for i, d in zh_docs.items() if i not in set(entity_ids)]
    pages += [_page(d, "en", "serper") for d in en_docs.values()]
    return WebSet(compounds, pages, entities)


def _parts(
    lang: Kind, folder: Path, docs: dict[str, dict[str, str]], skip: set[str], seed: str
) -> list[WebPart]:
    answers = load_answers(folder / "answers.jsonl")
    texts, qrels = _queries(folder / "queries.jsonl"), _qrels(folder / "qrels.tsv")
    ids = [q for q in texts if q in answers and qrels.get(q) in docs and qrels[q] not in skip]
    parts, used_docs = [], set()
    for qid in sample_ids(ids, None, seed):
        doc = docs[qrels[qid]]
        if doc["_id"] in used_docs:  # one question per page: a compound's parts have different pages
            continue
        used_docs.add(doc["_id"])
        page = _page(doc, lang, "bocha" if lang == "zh" else "serper")
        question = _named(texts[qid], page.title, lang)
        parts.append(WebPart(lang, qid, question, answers[qid], page.path))
    return parts


def _join(parts: list[WebPart]) -> str:
    text = ""
    for part in parts:
        question = part.question
        if part.kind == "entity":
            question += "。"
        elif not question.endswith(("?", "？")):
            question += "？" if part.kind == "zh" else "?"
        text += (" " if text and part.kind == "en" else "") + question
    return text
