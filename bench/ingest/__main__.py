"""Ingestion throughput: end to end against the embedding model, and the database write path.

Reproduce (about 4 minutes on 2 cores; results in bench/results/ingest.json):

    .venv/bin/python -m bench.ingest            # = make bench-ingest
    .venv/bin/python -m bench.ingest --parts database --db-chunks 50000   # the database path only
    .venv/bin/python -m bench.ingest --parts jobs    # (d): files/s per format, job vs direct (~1 min)

(a) The first --docs documents into a fresh database with an empty embedding cache (chunks/s end to
    end), then embedder.embed_documents alone on the very texts the service embedded, in the
    service's batches: the ratio says how much of ingestion is the model.
(b) The whole --dataset corpus into fresh databases whose embedding cache already holds every vector
    (from .data/bench-cache when bench.quality has filled it, deterministic random unit vectors
    otherwise): IngestionService end to end, in bulk mode, and the Python preparation alone.
(c) The database path alone (prepared rows, precomputed vectors): --db-chunks chunks of the
    synthetic corpus of bench/common/synthetic.py (real text, jieba tokens and metadata, clustered
    unit vectors), in the service's write groups (INGEST_EMBED_BATCH_SIZE chunks), each path into its
    own fresh database:
    the former per-document statements against one grouped write per transaction
    (documents.write_documents); then bulk mode (services.bulk_load.BulkLoad: the load, then the
    term-statistics refresh, index builds and ANALYZE until the commit) against bulk mode deferring
    the HNSW indexes only (GIN maintained row by row). The two paths of a pair write group by group
    in turn, so that other load on the machine falls on both alike.
(d) Files per second per format, through the direct upload path and as a background job (the
    same files, each path into its own fresh database): the job's overhead (bench/ingest/jobs.py).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from backend.composition import Services
from backend.config import Settings
from backend.db.connection import connect
from backend.db.repositories import documents as documents_repo
from backend.documents.bulk_load import BULK_DEFERRED_INDEX_METHODS, BulkLoad
from backend.ingest.documents import LoadedDocument
from backend.ingest.loaders import load_path
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.db import scratch_database, services
from bench.common.report import run_record, write_json
from bench.common.synthetic import SentencePool, SyntheticCorpus
from bench.common.vectors import BenchCache, make_embedder, seed_database_cache
from bench.ingest.jobs import job_overhead
from bench.ingest.report import render

PARTS = ("e2e", "cached", "database", "jobs")
WriteGroup = list[tuple[documents_repo.DocumentRow, list[documents_repo.ChunkRow]]]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cmrc2018-dev")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--docs", type=int, default=40, help="documents for the end-to-end measurement (a)")
    parser.add_argument(
        "--db-chunks", type=int, default=20_000, help="synthetic chunks for the database path (c)"
    )
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}"
    )
    parser.add_argument("--job-files", type=int, default=5, help="files of each format for (d)")
    parser.add_argument(
        "--job-embedder",
        choices=("local", "hashing"),
        default="hashing",
        help="(d)'s embedder: hashing (default) leaves the parse, preparation and database path, where a "
        "job's overhead shows; with the local model it is a sliver of the model's time",
    )
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ingest.json")
    return parser.parse_args(argv)


def load_documents(path: Path) -> list[LoadedDocument]:
    return [d for d in load_path(path) if isinstance(d, LoadedDocument)]


def end_to_end_vs_model(docs: list[LoadedDocument], settings: Settings, kind: str) -> dict[str, Any]:
    """(a): IngestionService with nothing cached, then the model alone on the same texts."""
    embedder = make_embedder(kind, settings)
    embedder.embed_documents(["warm-up: load the model before the clock starts"])
    with scratch_database("ingest_e2e") as url, services(url, settings, embedder) as app:
        summary = app.ingestion.ingest(docs, identity=None)
        texts = list(
            {c.embed_hash: c.embed_text for d in docs for c in app.ingestion.prepare(d).chunks}.values()
        )
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
    app: Services, dataset: str, docs: list[LoadedDocument]
) -> tuple[dict[str, np.ndarray], int]:
    """A vector for every chunk of docs: the bench cache's, else a random unit vector seeded by the hash."""
    embedder = app.embedder
    known = BenchCache(embedder.model_id, dataset).passages
    vectors, real = {}, 0
    for doc in docs:
        for c in app.ingestion.prepare(doc).chunks:
            if c.embed_hash in known:
                vectors[c.embed_hash] = known[c.embed_hash]
                real += 1
            else:
                seed = int.from_bytes(hashlib.sha256(c.embed_hash.encode()).digest()[:8], "little")
                v = np.random.default_rng(seed).standard_normal(embedder.dims).astype(np.float32)
                vectors[c.embed_hash] = v / np.linalg.norm(v)
    return vectors, real


def cached_ingest(docs: list[LoadedDocument], settings: Settings, kind: str, dataset: str) -> dict[str, Any]:
    """(b): the whole corpus with every vector cached, normally then in bulk mode; preparation alone."""
    embedder = make_embedder(kind, settings)  # never called: every vector is cached
    out: dict[str, Any] = {"documents": len(docs)}
    for label, bulk in (("", False), ("bulk_", True)):
        with scratch_database("ingest_cached") as url, services(url, settings, embedder) as app:
            vectors, real = cached_vectors(app, dataset, docs)
            seed_database_cache(app, vectors)
            summary = app.ingestion.ingest(docs, identity=None, bulk=bulk)
            started = time.perf_counter()
            chunks = sum(len(app.ingestion.prepare(d).chunks) for d in docs)
            prepare_seconds = time.perf_counter() - started
        out.update(
            {
                "chunks": chunks,
                "real_vectors": real,
                f"{label}chunks_embedded": summary.chunks_embedded,
                f"{label}seconds": round(summary.seconds, 3),
                f"{label}chunks_per_s": chunks / summary.seconds,
            }
        )
    out.update(prepare_seconds=round(prepare_seconds, 3), prepare_chunks_per_s=chunks / prepare_seconds)
    return out


def synthetic_groups(size: int, dims: int, group_chunks: int, datasets_dir: Path) -> list[WriteGroup]:
    """size synthetic chunks as prepared rows, cut into write groups the way the service cuts them."""
    groups: list[WriteGroup] = [[]]
    in_group = 0
    for batch in SyntheticCorpus(SentencePool.load(datasets_dir), size, dims).batches():
        for document, chunks in batch.rows():
            if in_group >= group_chunks:
                groups.append([])
                in_group = 0
            groups[-1].append((document, chunks))
            in_group += len(chunks)
    return [g for g in groups if g]


def _write(conn: psycopg.Connection, documents: WriteGroup, model: str) -> None:
    documents_repo.write_documents(conn, owner_id=None, embedding_model=model, documents=documents)


def timed_writes(conns: Sequence[psycopg.Connection], groups: list[WriteGroup], model: str) -> list[float]:
    """conns[0] writes per document (the former path), conns[1] per group; a transaction per group.

    Interleaved group by group, so other load on the machine falls on both paths alike.
    """
    seconds = [0.0, 0.0]
    for group in groups:
        for i, parts in enumerate(([[d] for d in group], [group])):
            started = time.perf_counter()
            with conns[i].transaction():
                for part in parts:
                    _write(conns[i], part, model)
            seconds[i] += time.perf_counter() - started
    return seconds


def timed_bulk(
    conns: Sequence[psycopg.Connection],
    groups: list[WriteGroup],
    model: str,
    settings: Settings,
    methods: Sequence[Sequence[str]],
) -> list[dict[str, Any]]:
    """One bulk load per connection (BulkLoad deferring methods[i]), loads interleaved group by group."""
    loads = [BulkLoad(conn, settings, methods=m) for conn, m in zip(conns, methods, strict=True)]
    load_seconds = [0.0] * len(loads)
    for group in groups:
        for i, load in enumerate(loads):
            started = time.perf_counter()
            load.start()
            _write(load.conn, group, model)
            load_seconds[i] += time.perf_counter() - started
    out = []
    for load, seconds in zip(loads, load_seconds, strict=True):
        started = time.perf_counter()
        stats = load.finish()
        load.conn.commit()
        catch_up = time.perf_counter() - started
        assert stats is not None
        out.append(
            {
                "deferred_indexes": stats.deferred_indexes,
                "load_seconds": round(seconds, 3),
                "term_stats_seconds": round(stats.term_stats_seconds, 3),
                "index_build_seconds": round(stats.index_build_seconds, 3),
                "analyze_seconds": round(stats.analyze_seconds, 3),
                "catch_up_seconds": round(catch_up, 3),
                "seconds": round(seconds + catch_up, 3),
            }
        )
    return out


def database_path(size: int, settings: Settings, model: str, dims: int, datasets_dir: Path) -> dict[str, Any]:
    """(c): the same rows through each write path, each path into its own fresh database."""
    groups = synthetic_groups(size, dims, settings.ingest_embed_batch_size, datasets_dir)
    out: dict[str, Any] = {
        "chunks": size,
        "documents": sum(len(g) for g in groups),
        "groups": len(groups),
        "group_chunks": settings.ingest_embed_batch_size,
        "dims": dims,
    }
    log(f"(c) per document and grouped, interleaved: {size} chunks each")
    with _databases(2) as conns:
        per_document, grouped = timed_writes(conns, groups, model)
    out.update(per_document={"seconds": round(per_document, 3)}, grouped={"seconds": round(grouped, 3)})
    log(f"(c) bulk mode deferring {'+'.join(BULK_DEFERRED_INDEX_METHODS)}, and HNSW only, interleaved")
    with _databases(2) as conns:
        out["bulk"], out["bulk_hnsw_only"] = timed_bulk(
            conns, groups, model, settings, [BULK_DEFERRED_INDEX_METHODS, ("hnsw",)]
        )
    return out


@contextmanager
def _databases(n: int) -> Iterator[list[psycopg.Connection]]:
    """Connections to n fresh scratch databases; each must hold every chunk at the end."""
    with ExitStack() as stack:
        conns = [
            stack.enter_context(connect(stack.enter_context(scratch_database("ingest_db")))) for _ in range(n)
        ]
        yield conns
        counts = [conn.execute("select count(*) from chunks").fetchone() for conn in conns]
        if len({c[0] if c else None for c in counts}) != 1:
            raise RuntimeError(f"the paths stored different chunk counts: {counts}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    parts = set(args.parts.split(","))
    settings = bench_settings()
    docs = load_documents(args.datasets_dir / args.dataset / "corpus.jsonl")
    embedder = make_embedder(args.embedder, settings)
    started = time.perf_counter()
    report: dict[str, Any] = {
        **run_record("bench.ingest"),
        "dataset": args.dataset,
        "embedder": embedder.model_id,
    }
    if "e2e" in parts:
        log(f"(a) {args.docs} documents end to end, then the model alone")
        report["end_to_end"] = end_to_end_vs_model(
            list(itertools.islice(docs, args.docs)), settings, args.embedder
        )
    if "cached" in parts:
        log(f"(b) {len(docs)} documents with every vector cached, normally and in bulk mode")
        report["cached"] = cached_ingest(docs, settings, args.embedder, args.dataset)
    if "database" in parts:
        report["database_path"] = database_path(
            args.db_chunks, settings, embedder.model_id, embedder.dims, args.datasets_dir
        )
    if "jobs" in parts:
        log(f"(d) {args.job_files} files per format, directly and as a background job")
        report["jobs"] = job_overhead(settings, args.job_embedder, args.job_files)
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out} in {report['total_seconds']} s")


if __name__ == "__main__":
    main()
