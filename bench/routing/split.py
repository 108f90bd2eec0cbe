"""The deterministic half split of a development set and the labels it gives its questions."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from bench.common.beir import Dataset, load_dataset


class MissingDataset(FileNotFoundError):
    """A development set named on the command line has no folder (or no corpus) on disk."""


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    gold_doc: str  # corpus id of the paragraph the question was written about
    answerable: bool  # its article is in the ingested half
    answers: tuple[str, ...]  # gold answer strings (answers.jsonl)


@dataclass(frozen=True)
class Split:
    dataset: Dataset
    ingested_rows: list[dict]  # corpus rows of the ingested half, file order
    questions: list[Question]  # every question of the set, file order

    @property
    def answerable(self) -> list[Question]:
        return [q for q in self.questions if q.answerable]

    @property
    def unanswerable(self) -> list[Question]:
        return [q for q in self.questions if not q.answerable]


def ingested_half(title: str) -> bool:
    """The half a title belongs to: even last byte of sha256(title) is ingested."""
    return hashlib.sha256(title.encode("utf-8")).digest()[-1] % 2 == 0


def load_split(name: str, root: Path) -> Split:
    """The set's corpus split by article title, and each question labelled by its gold article."""
    path = root / name
    if not (path / "corpus.jsonl").is_file():
        raise MissingDataset(f"development set {name!r} not found: {path} has no corpus.jsonl")
    dataset = load_dataset(name, root)
    with dataset.corpus_path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    title_of = {str(r["_id"]): r.get("title") or "" for r in rows}
    answers = _answers(path / "answers.jsonl")
    questions = []
    for qid, text in dataset.queries:
        gold = next(iter(dataset.qrels[qid]))  # one relevant paragraph per question (README)
        questions.append(
            Question(qid, text, gold, ingested_half(title_of.get(gold, "")), tuple(answers.get(qid, ())))
        )
    ingested = [r for r in rows if ingested_half(r.get("title") or "")]
    return Split(dataset, ingested, questions)


def write_half_corpus(split: Split, directory: Path) -> Dataset:
    """The ingested half as its own BEIR folder (corpus.jsonl only), for IngestionService."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for row in split.ingested_rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    d = split.dataset
    return Dataset(d.name, directory, d.queries, d.qrels)


def chat_sample(questions: list[Question], n: int) -> list[Question]:
    """n questions in sha256(qid) order: the same sample on every run, spread over the articles."""
    return sorted(questions, key=lambda q: hashlib.sha256(q.qid.encode("utf-8")).hexdigest())[:n]


def _answers(path: Path) -> dict[str, list[str]]:
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as fh:
        return {str(r["_id"]): list(r["answers"]) for r in map(json.loads, fh) if r}


COMBINED = "combined"


def combine(splits: list[Split]) -> Split:
    """Every set's ingested half in one corpus and every question in one list: a larger corpus in
    several languages, to see whether the score and its thresholds survive a change of corpus.
    Ids are prefixed with the set's name (xquad-en and xquad-zh share paragraph ids)."""
    rows: list[dict] = []
    questions: list[Question] = []
    queries: list[tuple[str, str]] = []
    qrels: dict[str, dict[str, int]] = {}
    for s in splits:
        name = s.dataset.name
        rows += [{**r, "_id": f"{name}:{r['_id']}"} for r in s.ingested_rows]
        for q in s.questions:
            qid = f"{name}:{q.qid}"
            questions.append(Question(qid, q.text, f"{name}:{q.gold_doc}", q.answerable, q.answers))
            queries.append((qid, q.text))
            qrels[qid] = {f"{name}:{q.gold_doc}": 1}
    return Split(Dataset(COMBINED, Path(COMBINED), queries, qrels), rows, questions)
