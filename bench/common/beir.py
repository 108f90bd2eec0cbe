"""BEIR datasets (corpus.jsonl, queries.jsonl, qrels.tsv) and document-level ranking metrics."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import DATASETS_DIR

CUTOFFS = (1, 5, 10)


@dataclass
class Dataset:
    name: str
    path: Path
    queries: list[tuple[str, str]]  # (query id, text), file order
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: relevance}

    @property
    def corpus_path(self) -> Path:
        return self.path / "corpus.jsonl"


class DatasetsMissing(SystemExit):
    """A benchmark needs development data that is not there: exits with a message naming the path."""


LAYOUT = "<name>/corpus.jsonl, queries.jsonl and qrels.tsv (BEIR layout)"


def dataset_names(root: Path = DATASETS_DIR) -> list[str]:
    """Every folder under root that holds a BEIR corpus; none is an error naming the folder."""
    names = sorted(p.parent.name for p in root.glob("*/corpus.jsonl"))
    if not names:
        state = "does not exist" if not root.is_dir() else "holds no dataset"
        raise DatasetsMissing(
            f"development datasets: {root.resolve()} {state}; expected {LAYOUT} "
            "(pass --datasets-dir where the benchmark has it)"
        )
    return names


def load_dataset(name: str, root: Path = DATASETS_DIR, limit_queries: int | None = None) -> Dataset:
    """Queries and qrels of one BEIR folder; queries without a relevant document are skipped."""
    path = root / name
    missing = [f for f in ("corpus.jsonl", "queries.jsonl", "qrels.tsv") if not (path / f).is_file()]
    if missing:
        lacks = ", ".join(missing)
        raise DatasetsMissing(f"dataset {name}: {path.resolve()} lacks {lacks}; expected {LAYOUT}")
    qrels: dict[str, dict[str, int]] = {}
    with (path / "qrels.tsv").open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)  # header: query-id corpus-id score
        for qid, doc_id, score in reader:
            if int(score) > 0:
                qrels.setdefault(qid, {})[doc_id] = int(score)
    rows = read_jsonl(path / "queries.jsonl")
    queries = [(str(r["_id"]), r["text"]) for r in rows if str(r["_id"]) in qrels][:limit_queries]
    return Dataset(name, path, queries, qrels)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON Lines file (blank lines skipped)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def first_occurrences(ids: Iterable[str]) -> list[str]:
    """Document ids in rank order, each kept at its first (best) chunk."""
    return list(dict.fromkeys(ids))


def score_ranking(ranked_chunk_docs: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """Recall@1/5/10, MRR@10 and nDCG@10 of one query, at document level."""
    docs = first_occurrences(ranked_chunk_docs)[:10]
    out = {f"recall@{k}": sum(1 for d in docs[:k] if d in relevant) / len(relevant) for k in CUTOFFS}
    out["mrr@10"] = next((1.0 / (i + 1) for i, d in enumerate(docs) if d in relevant), 0.0)
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(docs))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    out["ndcg@10"] = dcg / idcg if idcg else 0.0
    return out


def mean_scores(per_query: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric averaged over the queries."""
    if not per_query:
        return {}
    return {key: sum(q[key] for q in per_query) / len(per_query) for key in per_query[0]}
