"""Ingestion throughput: end to end against the embedding model alone, and the database path alone.

Usage: .venv/bin/python -m bench.ingest [--dataset cmrc2018-dev] [--embedder local|hashing] [--docs 40]

(a) The first --docs documents into a fresh database with an empty embedding cache (chunks/s end to
    end), then embedder.embed_documents alone on the very texts the service embedded, in the
    service's batches: the ratio says how much of ingestion is the model.
(b) The whole corpus into a fresh database whose embedding cache already holds every vector (from
    .data/bench-cache when bench.quality has filled it, deterministic random unit vectors otherwise):
    IngestionService end to end, the Python preparation alone, and the chunk COPY alone
    (documents.replace_chunks, one transaction).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np

from backend.config import Settings
from backend.db.connection import connect
from backend.db.repositories import documents as documents_repo
from backend.ingest.loaders import LoadedDocument, load_path
from backend.llm.extractive import ExtractiveLLM
from backend.services.container import build_services
from bench.common import (
    DATASETS_DIR,
    RESULTS_DIR,
    code_version,
    command_line,
    log,
    machine,
    markdown_table,
    scratch_database,
    write_json,
)
from bench.quality import make_embedder
from bench.vectors import BenchCache, seed_database_cache


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cmrc2018-dev")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--docs", type=int, default=40, help="documents for the end-to-end measurement (a)")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ingest.json")
    return parser.parse_args(argv)


def load_documents(path: Path) -> list[LoadedDocument]:
    return [d for d in load_path(path) if isinstance(d, LoadedDocument)]


def end_to_end_vs_model(docs: list[LoadedDocument], settings: Settings, kind: str) -> dict[str, Any]:
    """(a): IngestionService with nothing cached, then the model alone on the same texts."""
    embedder = make_embedder(kind, settings)
    embedder.embed_documents(["warm-up: load the model before the clock starts"])
    with scratch_database("ingest_e2e") as url:
        services = build_services(
            settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False
        )
        try:
            summary = services.ingestion.ingest(docs)
            texts = list(
                {
                    c.embed_hash: c.embed_text for d in docs for c in services.ingestion.prepare(d).chunks
                }.values()
            )
        finally:
            services.close()
    chunks = sum(o.chunks for o in summary.outcomes)
    batch = settings.ingest_embed_batch_size
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed_documents(texts[start : start + batch])
    model_seconds = time.perf_counter() - started
    return {
        "documents": len(docs),
        "chunks": chunks,
        "chunks_embedded": summary.chunks_embedded,
        "seconds": round(summary.seconds, 3),
        "chunks_per_s": chunks / summary.seconds,
        "model_texts": len(texts),
        "model_seconds": round(model_seconds, 3),
        "model_chunks_per_s": len(texts) / model_seconds,
    }


def cached_vectors(
    settings: Settings, kind: str, dataset: str, docs: list[LoadedDocument], services: Any
) -> tuple[dict[str, np.ndarray], int]:
    """A vector for every chunk of docs: the bench cache's, else a random unit vector seeded by the hash."""
    embedder = make_embedder(kind, settings)
    known = BenchCache(embedder.model_id, dataset).passages
    vectors, real = {}, 0
    for doc in docs:
        for c in services.ingestion.prepare(doc).chunks:
            if c.embed_hash in known:
                vectors[c.embed_hash] = known[c.embed_hash]
                real += 1
            else:
                seed = int.from_bytes(hashlib.sha256(c.embed_hash.encode()).digest()[:8], "little")
                v = np.random.default_rng(seed).standard_normal(embedder.dims).astype(np.float32)
                vectors[c.embed_hash] = v / np.linalg.norm(v)
    return vectors, real


def database_path(docs: list[LoadedDocument], settings: Settings, kind: str, dataset: str) -> dict[str, Any]:
    """(b): the whole corpus with every vector cached; then preparation alone; then COPY alone."""
    embedder = make_embedder(kind, settings)  # never called: every vector is cached
    out: dict[str, Any] = {"documents": len(docs)}
    with scratch_database("ingest_cached") as url:
        services = build_services(
            settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False
        )
        try:
            vectors, real = cached_vectors(settings, kind, dataset, docs, services)
            with services.pool.connection() as conn:
                seed_database_cache(conn, model=embedder.model_id, vectors=vectors)
            summary = services.ingestion.ingest(docs)
            started = time.perf_counter()
            prepared = [services.ingestion.prepare(d) for d in docs]
            prepare_seconds = time.perf_counter() - started
        finally:
            services.close()
    chunks = sum(o.chunks for o in summary.outcomes)
    out.update(
        chunks=chunks,
        real_vectors=real,
        chunks_embedded=summary.chunks_embedded,
        seconds=round(summary.seconds, 3),
        chunks_per_s=chunks / summary.seconds,
        prepare_seconds=round(prepare_seconds, 3),
        prepare_chunks_per_s=chunks / prepare_seconds,
    )
    with scratch_database("ingest_copy") as url, connect(url) as conn:
        ids = [
            documents_repo.upsert_document(
                conn,
                owner_id=None,
                external_id=p.external_id,
                title=p.title,
                source=p.source,
                content_hash=p.content_hash,
                metadata=p.metadata,
            )[0]
            for p in prepared
        ]
        conn.commit()
        rows = [p.chunk_rows(vectors) for p in prepared]
        started = time.perf_counter()
        with conn.transaction():
            for doc_id, chunk_rows in zip(ids, rows, strict=True):
                documents_repo.replace_chunks(
                    conn,
                    document_id=doc_id,
                    owner_id=None,
                    embedding_model=embedder.model_id,
                    chunks=chunk_rows,
                )
        copy_seconds = time.perf_counter() - started
    out.update(copy_seconds=round(copy_seconds, 3), copy_chunks_per_s=chunks / copy_seconds)
    return out


def render(report: dict[str, Any]) -> str:
    a, b, m = report["end_to_end"], report["database_path"], report["machine"]
    rows = [
        [
            f"(a) IngestionService, empty cache, first {a['documents']} docs",
            a["chunks"],
            f"{a['seconds']:.2f}",
            f"{a['chunks_per_s']:.2f}",
        ],
        [
            "(a) embedder.embed_documents alone, same texts",
            a["model_texts"],
            f"{a['model_seconds']:.2f}",
            f"{a['model_chunks_per_s']:.2f}",
        ],
        [
            f"(b) IngestionService, every vector cached, {b['documents']} docs",
            b["chunks"],
            f"{b['seconds']:.2f}",
            f"{b['chunks_per_s']:.1f}",
        ],
        [
            "(b) preparation alone (chunk, jieba, metadata)",
            b["chunks"],
            f"{b['prepare_seconds']:.2f}",
            f"{b['prepare_chunks_per_s']:.1f}",
        ],
        [
            "(b) replace_chunks COPY alone, one transaction",
            b["chunks"],
            f"{b['copy_seconds']:.2f}",
            f"{b['copy_chunks_per_s']:.1f}",
        ],
    ]
    ratio = a["chunks_per_s"] / a["model_chunks_per_s"]
    lines = [
        f"# Ingestion throughput ({report['embedder']}, {report['dataset']})",
        markdown_table(
            ["machine", "command", "code"],
            [[f"{m['nproc']} cores, {m['cpu']}", f"`{report['command']}`", report["code"]]],
            "lll",
        ),
        markdown_table(["measurement", "chunks", "seconds", "chunks/s"], rows, "lrrr"),
        markdown_table(
            ["ratio", "value"],
            [
                ["end to end / model alone (a)", f"{ratio:.2f} (the model is {ratio:.0%} of the time)"],
                ["cached ingest / COPY alone (b)", f"{b['chunks_per_s'] / b['copy_chunks_per_s']:.2f}"],
                [
                    "cached ingest / preparation alone (b)",
                    f"{b['chunks_per_s'] / b['prepare_chunks_per_s']:.2f}",
                ],
                ["model alone / cached ingest", f"{a['model_chunks_per_s'] / b['chunks_per_s']:.3f}"],
            ],
            "lr",
        ),
        f"(b) used {b['real_vectors']} vectors from .data/bench-cache and "
        f"{b['chunks'] - b['real_vectors']} random unit vectors; chunks embedded during (b): "
        f"{b['chunks_embedded']}.",
    ]
    return "\n\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = Settings(_env_file=None, embedding_provider="local", llm_provider="extractive")
    docs = load_documents(args.datasets_dir / args.dataset / "corpus.jsonl")
    started = time.perf_counter()
    log(f"(a) {args.docs} documents end to end, then the model alone")
    end_to_end = end_to_end_vs_model(list(itertools.islice(docs, args.docs)), settings, args.embedder)
    log(f"(b) {len(docs)} documents with every vector cached, then preparation and COPY alone")
    db_path = database_path(docs, settings, args.embedder, args.dataset)
    report = {
        "command": command_line("bench.ingest"),
        "code": code_version(),
        "machine": machine(),
        "dataset": args.dataset,
        "embedder": make_embedder(args.embedder, settings).model_id,
        "end_to_end": end_to_end,
        "database_path": db_path,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out} in {report['total_seconds']} s")


if __name__ == "__main__":
    main()
