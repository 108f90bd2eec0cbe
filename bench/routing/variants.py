"""The question variants of issue 26, built from the development sets (pure functions, no model).

Each builder returns a Split: the corpus rows to ingest and every question with its label. The
definitions, with the sample sizes a run used, are in docs/routing.md ("Questions real people ask").

- monolingual: today's half split (split.load_split): answerable = its article was ingested.
- keyword: the same corpus and labels, each question cut to its content words (keywords.py).
- xlang: one set's questions over its parallel set's corpus (xquad-zh over xquad-en and back): the
  sets share paragraph ids, question ids, gold paragraphs and the half split (checked, not assumed).
- near-miss: within the ingested half, every article with at least two paragraphs loses every other
  paragraph (sha256(paragraph id) order, positions 2, 4, ...; the first always stays); questions about
  those articles only: answerable = its paragraph stays, unanswerable = its paragraph was removed while
  the rest of its article stays (the nearest passage is on topic and does not answer). A removed
  paragraph's question is left out when one of its gold answer strings (>= 2 characters) occurs in a
  paragraph of the article that stays: the corpus might still answer it.
- mixed: every article set's ingested half in one corpus (split.combine, the existing --combined).
- native: a set with its own answerability labels (answerable.tsv: real search queries, each with an
  on-topic passage that answers it or not); a prefix of its queries with the corpus up to the same
  position (load_native).
"""

from __future__ import annotations

import csv
import hashlib
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from bench.common.beir import Dataset, read_jsonl
from bench.routing.keywords import keyword_query
from bench.routing.split import COMBINED, MissingDataset, Question, Split, chat_sample

KINDS = ("monolingual", "keyword", "xlang", "near-miss", "mixed", "native")
NATIVE_LABELS = "answerable.tsv"
PARALLEL = (("xquad-zh-dev", "xquad-en-dev"), ("xquad-en-dev", "xquad-zh-dev"))
MIN_SHARED_ANSWER = 2  # characters: shorter gold strings (a digit) say nothing about another paragraph


class NotParallel(ValueError):
    """Two sets named as parallel differ in their questions, gold paragraphs or split."""


@dataclass(frozen=True)
class Variant:
    key: str  # report key and records file stem ("cmrc2018-dev", "keyword.cmrc2018-dev", ...)
    kind: str  # one of KINDS
    label: str  # the set(s) it is built from, as the table shows them
    split: Split
    caches: tuple[str, ...]  # BenchCache datasets whose vectors it reuses
    left_out: int = 0  # questions of the source set the variant could not use (see the builder)


def has_native_labels(name: str, root: Path) -> bool:
    return (root / name / NATIVE_LABELS).is_file()


def per_side(questions: list[Question], n: int) -> list[Question]:
    """At most n answerable and n unanswerable questions (sha256(qid) order, as the chat sample); 0: all."""
    if n <= 0:
        return list(questions)
    chosen = {
        q.qid
        for side in (True, False)
        for q in chat_sample([q for q in questions if q.answerable == side], n)
    }
    return [q for q in questions if q.qid in chosen]


def keyword(split: Split, n: int = 0) -> tuple[Split, int]:
    """The split with each question replaced by its keyword version (n per side, 0: all), and how many
    questions had fewer than two content words."""
    out, dropped = [], 0
    for q in per_side(split.questions, n):
        text = keyword_query(q.text)
        if text is None:
            dropped += 1
        else:
            out.append(replace(q, text=text))
    return Split(split.dataset, split.ingested_rows, out), dropped


def cross_lingual(questions: Split, corpus: Split) -> Split:
    """`questions`' questions asked of `corpus`' ingested half. Labels and gold paragraphs must agree
    (the sets are parallel); the gold strings are the corpus side's (a reply quotes the corpus)."""
    theirs = {q.qid: q for q in corpus.questions}
    mine = {q.qid: q for q in questions.questions}
    if set(theirs) != set(mine):
        raise NotParallel(
            f"{questions.dataset.name} and {corpus.dataset.name} differ in "
            f"{len(set(theirs) ^ set(mine))} question ids"
        )
    bad = [
        q
        for q in mine.values()
        if (q.gold_doc, q.answerable) != (theirs[q.qid].gold_doc, theirs[q.qid].answerable)
    ]
    if bad:
        raise NotParallel(f"{len(bad)} questions differ in gold paragraph or half, e.g. {bad[0].qid}")
    asked = [replace(q, answers=theirs[q.qid].answers) for q in questions.questions]
    return Split(corpus.dataset, corpus.ingested_rows, asked)


@dataclass(frozen=True)
class NearMiss:
    split: Split
    removed: frozenset[str]  # paragraph ids taken out of the ingested half
    answer_elsewhere: int  # removed paragraphs' questions left out: a kept paragraph holds a gold string


def near_miss(split: Split) -> NearMiss:
    """The ingested half without every other paragraph of its multi-paragraph articles (module doc)."""
    articles: dict[str, list[dict]] = defaultdict(list)
    for row in split.ingested_rows:
        articles[row.get("title") or ""].append(row)
    removed: set[str] = set()
    title_of: dict[str, str] = {}
    for title, rows in articles.items():
        for row in rows:
            title_of[str(row["_id"])] = title
        if len(rows) >= 2:
            ordered = sorted(rows, key=lambda r: hashlib.sha256(str(r["_id"]).encode()).hexdigest())
            removed |= {str(r["_id"]) for r in ordered[1::2]}
    kept_text: dict[str, list[str]] = defaultdict(list)
    for row in split.ingested_rows:
        if str(row["_id"]) not in removed:
            kept_text[title_of[str(row["_id"])]].append(row["text"])
    questions, elsewhere = [], 0
    for q in split.questions:
        article = title_of.get(q.gold_doc)
        if article is None or len(articles[article]) < 2:
            continue  # its article was not ingested, or has no other paragraph
        if q.gold_doc not in removed:
            questions.append(replace(q, answerable=True))
            continue
        golds = [a.strip() for a in q.answers if len(a.strip()) >= MIN_SHARED_ANSWER]
        if any(g in text for g in golds for text in kept_text[article]):
            elsewhere += 1
            continue
        questions.append(replace(q, answerable=False))
    rows = [r for r in split.ingested_rows if str(r["_id"]) not in removed]
    return NearMiss(Split(split.dataset, rows, questions), frozenset(removed), elsewhere)


def load_native(name: str, root: Path, n: int = 0) -> Split:
    """A set labelled by answerable.tsv, every query with an on-topic passage that answers it or not;
    an unanswerable query has no gold paragraph. n > 0: the shortest prefix of the queries (file order)
    holding n of each side, with the corpus rows up to the same position: the corpus lists the passages
    in the order of their first query (each answerable query's passage sits at or before the query's own
    position: checked, an error otherwise), so the prefix holds every sampled query's passage and fewer
    others. n = 0: every query, the whole corpus."""
    path = root / name
    if not (path / "corpus.jsonl").is_file() or not (path / NATIVE_LABELS).is_file():
        raise MissingDataset(f"development set {name!r}: {path} needs corpus.jsonl and {NATIVE_LABELS}")
    labels = dict(_tsv(path / NATIVE_LABELS))
    qrels: dict[str, dict[str, int]] = {}
    for qid, doc, score in _tsv(path / "qrels.tsv"):
        if int(score) > 0:
            qrels.setdefault(qid, {})[doc] = int(score)
    answers = {str(r["_id"]): tuple(r["answers"]) for r in read_jsonl(path / "answers.jsonl")}
    questions = []
    for row in read_jsonl(path / "queries.jsonl"):
        qid = str(row["_id"])
        if qid in labels:
            gold = next(iter(qrels.get(qid, {})), "")
            answerable = labels[qid].strip() == "1" and bool(gold)
            questions.append(Question(qid, row["text"], gold, answerable, answers.get(qid, ())))
    rows = read_jsonl(path / "corpus.jsonl")
    if n > 0:
        questions = questions[: _prefix_holding(questions, n)]
        rows = rows[: len(questions)]
        held = {str(r["_id"]) for r in rows}
        missing = [q.qid for q in questions if q.answerable and q.gold_doc not in held]
        if missing:
            raise ValueError(f"{name}: the corpus is not in query order ({missing[0]}'s passage comes later)")
    queries = [(q.qid, q.text) for q in questions]
    return Split(Dataset(name, path, queries, qrels), rows, questions)


def _prefix_holding(questions: list[Question], n: int) -> int:
    """The length of the shortest prefix with n answerable and n unanswerable questions (or all)."""
    seen = {True: 0, False: 0}
    for i, q in enumerate(questions, 1):
        seen[q.answerable] += 1
        if min(seen.values()) >= n:
            return i
    return len(questions)


def _tsv(path: Path) -> list[list[str]]:
    """The rows of a tab-separated file after its header."""
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter="\t"))[1:]


def variant_key(kind: str, label: str) -> str:
    """Monolingual keeps the set's own name and mixed the existing "combined" (their records and
    report keys predate the variants); the others are <kind>.<label>."""
    if kind == "monolingual":
        return label
    if kind == "mixed":
        return COMBINED
    return f"{kind}.{label}"
