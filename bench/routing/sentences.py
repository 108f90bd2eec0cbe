"""A study for issue 26 item 1: would sentence-level evidence lift the cross-lingual answerability?

Usage: .venv/bin/python -m bench.routing.sentences [--max-leak 0.03] [--out FILE]

Reads the stored searches of the two xlang groups (python -m bench.routing --variants xlang, which keeps
the chunk texts) and embeds, with the local model, every sentence of the corpus the group searched
(vectors cached in the bench cache). For each question it reads, beside the product's own evidence
(the vector leg's best cosine, and its lift over the leg's row 20 as policy v7 does), the cosine of
the question with single sentences: the best sentence of the vector leg's three best chunks, of its
30 candidates, and of the whole corpus, and each one's lift over a background of sentences (the
candidates' sentence at rank 3x the candidates' count / the corpus's 51st). A chunk's vector averages
its sentences; a question that one sentence answers stands out more against that sentence.

The answer rates are at one cut for both directions (the issue asks for one policy): the lowest cut at
which the pooled unanswerable questions are answered at most --max-leak. Nothing here changes the
product; the figures go to docs/routing.md ("Sentence-level evidence across languages: a study").
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from backend.confidence.calibrate import auc
from backend.embeddings import LocalEmbedder
from backend.ingest.prepare import sha256
from bench.common import RESULTS_DIR, bench_settings, log
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder
from bench.routing.fit import WORK_DIR
from bench.routing.xlang_branch import DIRECTIONS

_SENTENCE = re.compile(r"(?<=[。！？!?；;])|(?<=[.!?])\s+|\n+")
MIN_SENTENCE_CHARS = 8
TOP_CHUNKS = 3  # the sentences of the vector leg's best chunks
BACKGROUND_RANK = 50  # the corpus's sentence at this rank (0-based) is the background

Row = dict[str, Any]
FEATURES: dict[str, Callable[[Row], float]] = {
    "chunk cosine (v7's evidence)": lambda r: r["top1"],
    "chunk lift over row 20 (v7's feature)": lambda r: r["top1"] - r["row20"],
    "best sentence of the top 3 chunks": lambda r: r["sentence_top3"],
    "best sentence of the top 3 chunks, lift over row 20": lambda r: r["sentence_top3"] - r["row20"],
    "best sentence of the candidates, lift over their background": lambda r: (
        r["sentence_candidates"] - r["candidates_background"]
    ),
    "best sentence of the corpus": lambda r: r["sentence_corpus"],
    "best sentence of the corpus, lift over its 51st": lambda r: (
        r["sentence_corpus"] - r["corpus_background"]
    ),
}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and len(s.strip()) >= MIN_SENTENCE_CHARS]


def group_rows(name: str, embedder: CachedEmbedder) -> list[Row]:
    """One row per question of the group: its answerability and the cosines the study compares."""
    with gzip.open(WORK_DIR / f"{name}.chunks.json.gz", "rt", encoding="utf-8") as fh:
        chunks: dict[str, str] = json.load(fh)
    with gzip.open(WORK_DIR / f"{name}.records.jsonl.gz", "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    owner: list[str] = []
    texts: list[str] = []
    for chunk_id, text in chunks.items():
        for sentence in sentences(text):
            owner.append(chunk_id)
            texts.append(sentence)
    vectors = _passages(texts, embedder)
    by_chunk: dict[str, list[int]] = {}
    for i, chunk_id in enumerate(owner):
        by_chunk.setdefault(chunk_id, []).append(i)
    rows = []
    for record in records:
        q = embedder.embed_query(record["text"])
        cosines = vectors @ q
        leg = sorted(record["searches"]["default"]["candidates"], key=lambda c: -c["similarity"])
        ids = [str(c["chunk_id"]) for c in leg]
        top3 = [i for c in ids[:TOP_CHUNKS] for i in by_chunk.get(c, [])]
        candidates = np.sort([cosines[i] for c in ids for i in by_chunk.get(c, [])])[::-1]
        corpus = np.sort(cosines)[::-1]
        rows.append(
            {
                "answerable": bool(record["answerable"]),
                "top1": float(leg[0]["similarity"]),
                "row20": float(leg[min(19, len(leg) - 1)]["similarity"]),
                "sentence_top3": float(max(cosines[i] for i in top3)) if top3 else 0.0,
                "sentence_candidates": float(candidates[0]) if len(candidates) else 0.0,
                "candidates_background": float(candidates[min(3 * TOP_CHUNKS * 10, len(candidates) - 1)])
                if len(candidates)
                else 0.0,
                "sentence_corpus": float(corpus[0]),
                "corpus_background": float(corpus[min(BACKGROUND_RANK, len(corpus) - 1)]),
            }
        )
    log(f"{name}: {len(records)} questions, {len(chunks)} chunks, {len(texts)} sentences")
    return rows


def _passages(texts: Sequence[str], embedder: CachedEmbedder) -> np.ndarray:
    known = embedder.cache.passages
    missing = [t for t in dict.fromkeys(texts) if sha256(t) not in known]
    if missing:
        log(f"embedding {len(missing)} sentences")
        embedder.embed_documents(missing)
    return np.stack([known[sha256(t)] for t in texts])


def study(groups: dict[str, list[Row]], max_leak: float) -> list[dict[str, Any]]:
    """Per feature: AUROC per direction, and the answer rates at the pooled cut of max_leak."""
    table = []
    for feature, value in FEATURES.items():
        pooled = sorted(
            (value(r) for rows in groups.values() for r in rows if not r["answerable"]), reverse=True
        )
        cut = pooled[int(max_leak * len(pooled))]
        entry: dict[str, Any] = {"feature": feature, "cut": round(cut, 4), "directions": {}}
        for name, rows in groups.items():
            pos = [value(r) for r in rows if r["answerable"]]
            neg = [value(r) for r in rows if not r["answerable"]]
            entry["directions"][name] = {
                "auroc": round(auc(pos, neg), 3),
                "answerable_answered": round(sum(p > cut for p in pos) / len(pos), 3),
                "unanswerable_answered": round(sum(n > cut for n in neg) / len(neg), 3),
            }
        table.append(entry)
    return table


def render(table: list[dict[str, Any]], max_leak: float) -> str:
    names = list(table[0]["directions"])
    head = " | ".join(f"{n.removeprefix('xlang.')} AUROC / ans → answer / unans → answer" for n in names)
    lines = [f"| feature (one cut, pooled leak ≤ {max_leak:.0%}) | {head} |", "|---|" + "---|" * len(names)]
    for entry in table:
        cells = [
            f"{d['auroc']:.3f} / {d['answerable_answered']:.1%} / {d['unanswerable_answered']:.1%}"
            for d in entry["directions"].values()
        ]
        lines.append(f"| {entry['feature']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.sentences", description=__doc__)
    parser.add_argument("--max-leak", type=float, default=0.03)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "routing-sentences.json")
    args = parser.parse_args(argv)
    missing = [n for n in DIRECTIONS if not (WORK_DIR / f"{n}.chunks.json.gz").is_file()]
    if missing:
        log(
            f"error: no stored searches for {', '.join(missing)}: "
            "run python -m bench.routing --variants xlang"
        )
        return 2
    inner = LocalEmbedder(bench_settings())
    cache = BenchCache(inner.model_id, "routing.sentences")
    embedder = CachedEmbedder(inner, cache)
    try:
        groups = {name: group_rows(name, embedder) for name in DIRECTIONS}
    finally:
        cache.save()
    table = study(groups, args.max_leak)
    print(render(table, args.max_leak))
    report = {
        "command": command_line("bench.routing.sentences"),
        "code": code_version(),
        "machine": machine(),
        "embedder": inner.model_id,
        "max_leak": args.max_leak,
        "table": table,
    }
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
