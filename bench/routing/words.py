"""A study for issue 26 item 1: would word alignment through the embedding lift cross-lingual answerability?

Usage: .venv/bin/python -m bench.routing.words [--max-leak 0.03] [--top-documents 5] [--out FILE]

Across languages the answerability score's term coverage reads zero: a Chinese question shares no term
with an English passage. This study asks whether the question's words can be matched to the passage's
words through the local model instead — "term coverage through the embedding space", the design the
issue names. Each significant word of the question and of the candidates' texts is embedded alone (the
e5 "query: " prefix for both sides, which aligns words better than "passage: " in this study; vectors
cached in the bench cache); a question word is
*aligned* with a document when, among the words of the top --top-documents cross-lingual documents of
the search (by their best chunk's cosine), the word closest to it is in that document. `word_alignment`
is the idf-weighted share of the question's words aligned with the document (v3's term weights).

Reads the stored searches of the two xlang groups (python -m bench.routing --variants xlang, which
keeps the chunk texts) and the sentence study's cached sentence vectors (python -m
bench.routing.sentences) for the combinations. Each feature set is fitted as policy v7's cross-lingual
branch is (bench.routing.xlang_branch: monotone logistic regression on each question's best
cross-lingual document over both directions, one cut where neither direction answers more than
--max-leak of its unanswerable questions), with leave-one-direction-out beside it. Nothing here changes
the product; the figures go to docs/routing.md ("Word alignment across languages: a study").
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from backend.confidence.answerability import (
    document_evidence,
    features,
    passage_text,
    ranked_background,
    scored_candidates,
    term_weights,
)
from backend.confidence.calibrate import auc
from backend.embeddings import LocalEmbedder
from backend.ingest.prepare import sha256
from bench.common import RESULTS_DIR, bench_settings, log
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder
from bench.routing import sentences as sentence_study
from bench.routing import xlang_branch
from bench.routing.fit import DEPTH, LEG_DEPTH, WORK_DIR
from bench.routing.records import load_records
from bench.routing.xlang_branch import DIRECTIONS, Row

# `import backend.text.segment` would bind the package attribute `segment`, a function of that module.
__import__("backend.text.segment")
segment = sys.modules["backend.text.segment"]

BACKGROUND_RANK = 20  # v7's cross-lingual background: the vector leg's row 20
FEATURE_SETS: dict[str, list[str]] = {
    "v7: chunk lift over row 20": ["cosine_lift"],
    "+ word alignment": ["cosine_lift", "word_alignment"],
    "+ sentence lift (the sentence study's best)": ["cosine_lift", "sentence_lift"],
    "+ word alignment + sentence lift": ["cosine_lift", "word_alignment", "sentence_lift"],
}


def significant_words(text: str) -> list[str]:
    """The words a term can be: segmented like the index, stopwords and 1-letter Latin noise dropped,
    unstemmed (the model reads words, not Snowball stems), de-duplicated in order."""
    stop = segment.stopwords()
    return [
        w
        for w in dict.fromkeys(segment.words(text))
        if w not in stop and not (len(w) == 1 and w.isascii() and not w.isdigit())
    ]


class WordVectors:
    """Unit vectors of single words (as queries), kept in the bench cache."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self.embedder = embedder

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        known = self.embedder.cache.queries
        missing = [w for w in dict.fromkeys(words) if sha256(w) not in known]
        if missing:
            log(f"embedding {len(missing)} words")
            for word in missing:
                self.embedder.embed_query(word)
        if not words:
            return np.zeros((0, self.embedder.dims), dtype=np.float32)
        return np.stack([known[sha256(w)] for w in words])


def alignment(
    question_words: Sequence[str],
    weights: Sequence[float],
    documents: dict[str, list[str]],
    vectors: WordVectors,
) -> dict[str, float]:
    """Per document: the weighted share of the question's words whose closest word among all the
    documents' words is in that document."""
    pooled = sorted({w for words in documents.values() for w in words})
    if not question_words or not pooled:
        return dict.fromkeys(documents, 0.0)
    index = {w: i for i, w in enumerate(pooled)}
    similarity = vectors(question_words) @ vectors(pooled).T  # question word x pooled word
    closest = similarity.argmax(axis=1)
    total = sum(weights) or 1.0
    out = {}
    for doc, words in documents.items():
        held = {index[w] for w in words}
        out[doc] = sum(wt for wt, c in zip(weights, closest, strict=True) if c in held) / total
    return out


def group_rows(name: str, vectors: WordVectors, top_documents: int) -> list[Row]:
    """Per question: the features of its top cross-lingual documents, and whether it is answerable."""
    rows: list[Row] = []
    for record in load_records(WORK_DIR / f"{name}.records.jsonl.gz"):
        candidates = record.searches["default"].candidates
        scored = scored_candidates(candidates, DEPTH, LEG_DEPTH)
        background = ranked_background(candidates, BACKGROUND_RANK)
        docs = document_evidence(scored, record.terms, record.term_idfs, record.text)
        cross = sorted(
            (d for d in docs if d.cross_lingual and d.cosine is not None), key=lambda d: -(d.cosine or 0.0)
        )[:top_documents]
        words: dict[str, list[str]] = {str(d.parent_id): [] for d in cross}
        for c in scored:
            if str(c.document_id) in words:
                words[str(c.document_id)] += significant_words(passage_text(c))
        question_words = significant_words(segment.clean_query(record.text))
        idf = term_weights(record.terms, record.term_idfs)
        fallback = max(idf.values(), default=1.0)
        weights = [idf.get(segment.stem(w), fallback) for w in question_words]
        aligned = alignment(question_words, weights, words, vectors)
        values = [{**features(d, background), "word_alignment": aligned[str(d.parent_id)]} for d in cross]
        rows.append((values, record.answerable))
    return rows


def add_sentence_lift(name: str, rows: list[Row], embedder: CachedEmbedder) -> None:
    """The sentence study's best feature (the corpus's best sentence over its 51st), per question."""
    sentence_rows = sentence_study.group_rows(name, embedder)
    for (values, answerable), sentence_row in zip(rows, sentence_rows, strict=True):
        assert answerable == sentence_row["answerable"]
        for v in values:
            v["sentence_lift"] = sentence_row["sentence_corpus"] - sentence_row["corpus_background"]


def study(groups: dict[str, list[Row]], max_leak: float) -> list[dict[str, Any]]:
    """Per feature set: the joint fit's weights and answer rates, and leave-one-direction-out."""
    table = []
    for label, names in FEATURE_SETS.items():
        fit = xlang_branch.fit_branch(list(groups.values()), names, max_leak)
        entry: dict[str, Any] = {"features": label, "weights": fit["weights"], "directions": {}}
        for name, rows in groups.items():
            best = [xlang_branch.linear(x, fit["weights"]) for x, _ in rows]
            pos = [s for s, (_, y) in zip(best, rows, strict=True) if y]
            neg = [s for s, (_, y) in zip(best, rows, strict=True) if not y]
            (other,) = [n for n in groups if n != name]
            held = xlang_branch.fit_branch([groups[other]], names, max_leak)
            entry["directions"][name] = {
                "auroc": round(auc(pos, neg), 3),
                **{k: round(v, 3) for k, v in xlang_branch.rates(rows, fit["weights"], fit["cut"]).items()},
                "held_out": {
                    k: round(v, 3) for k, v in xlang_branch.rates(rows, held["weights"], held["cut"]).items()
                },
            }
        table.append(entry)
    return table


def render(table: list[dict[str, Any]], max_leak: float) -> str:
    names = list(table[0]["directions"])
    head = " | ".join(
        f"{n.removeprefix('xlang.')}: AUROC / ans → answer / unans → answer (held out)" for n in names
    )
    lines = [
        f"| features (joint fit, leak ≤ {max_leak:.0%} per direction) | {head} |",
        "|---|" + "---|" * len(names),
    ]
    for entry in table:
        cells = [
            f"{d['auroc']:.3f} / {d['answerable_answered']:.1%} / {d['unanswerable_answered']:.1%} "
            f"({d['held_out']['answerable_answered']:.1%} / {d['held_out']['unanswerable_answered']:.1%})"
            for d in entry["directions"].values()
        ]
        lines.append(f"| {entry['features']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.words", description=__doc__)
    parser.add_argument("--max-leak", type=float, default=0.03)
    parser.add_argument("--top-documents", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "routing-words.json")
    args = parser.parse_args(argv)
    missing = [n for n in DIRECTIONS if not (WORK_DIR / f"{n}.chunks.json.gz").is_file()]
    if missing:
        log(
            f"error: no stored searches for {', '.join(missing)}: "
            "run python -m bench.routing --variants xlang"
        )
        return 2
    if args.top_documents < 1:
        log("error: --top-documents must be at least 1")
        return 2
    inner = LocalEmbedder(bench_settings())
    word_cache = BenchCache(inner.model_id, "routing.words")
    sentence_cache = BenchCache(inner.model_id, "routing.sentences")
    try:
        vectors = WordVectors(CachedEmbedder(inner, word_cache))
        groups = {name: group_rows(name, vectors, args.top_documents) for name in DIRECTIONS}
        for name, rows in groups.items():
            add_sentence_lift(name, rows, CachedEmbedder(inner, sentence_cache))
    finally:
        word_cache.save()
        sentence_cache.save()
    table = study(groups, args.max_leak)
    print(render(table, args.max_leak))
    sizes = {name: _vocabulary(name) for name in DIRECTIONS}
    write_json(
        args.out,
        {
            "command": command_line("bench.routing.words"),
            "code": code_version(),
            "machine": machine(),
            "embedder": inner.model_id,
            "max_leak": args.max_leak,
            "top_documents": args.top_documents,
            "vocabulary": sizes,
            "table": table,
        },
    )
    return 0


def _vocabulary(name: str) -> dict[str, float]:
    """The searched corpus's distinct significant words, and per chunk (what a word table would hold)."""
    with gzip.open(WORK_DIR / f"{name}.chunks.json.gz", "rt", encoding="utf-8") as fh:
        chunks: dict[str, str] = json.load(fh)
    per_chunk = [set(significant_words(t)) for t in chunks.values()]
    vocabulary = set().union(*per_chunk) if per_chunk else set()
    return {
        "chunks": len(chunks),
        "distinct_words": len(vocabulary),
        "distinct_words_per_chunk": round(sum(map(len, per_chunk)) / max(len(per_chunk), 1), 1),
    }


if __name__ == "__main__":
    raise SystemExit(main())
