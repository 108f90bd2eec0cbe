"""Ingestion throughput: end to end against the embedding model, and the database write path.

Reproduce (about 4 minutes on 2 cores; results in bench/results/ingest.json):

    .venv/bin/python -m bench.ingest            # = make bench-ingest
    .venv/bin/python -m bench.ingest --parts database --db-chunks 50000   # the database path only

(a) The first --docs documents into a fresh database with an empty embedding cache (chunks/s end to
    end), then embedder.embed_documents alone on the very texts the service embedded, in the
    service's batches: the ratio says how much of ingestion is the model.
(b) The whole --dataset corpus into fresh databases whose embedding cache already holds every vector
    (from .data/bench-cache when bench.quality has filled it, deterministic random unit vectors
    otherwise): IngestionService end to end, in bulk mode, and the Python preparation alone.
(c) The database path alone (prepared rows, precomputed vectors): --db-chunks chunks of
    bench.common.synthetic's corpus (real text, jieba tokens and metadata, clustered unit vectors), in the
    service's write groups (INGEST_EMBED_BATCH_SIZE chunks), each path into its own fresh database:
    the former per-document statements against one grouped write per transaction
    (documents.write_documents); then bulk mode (services.bulk_load.BulkLoad: the load, then the
    term-statistics refresh, index builds and ANALYZE until the commit) against bulk mode deferring
    the HNSW indexes only (GIN maintained row by row). The two paths of a pair write group by group
    in turn, so that other load on the machine falls on both alike.
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

from backend.config import Settings
from backend.db.connection import connect
from backend.db.repositories import documents as documents_repo
from backend.ingest.loaders import LoadedDocument, load_path
from backend.llm.extractive import ExtractiveLLM
from backend.services.bulk_load import BULK_DEFERRED_INDEX_METHODS, BulkLoad
from backend.services.container import build_services
from bench.common import DATASETS_DIR, RESULTS_DIR, log
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, markdown_table, write_json
from bench.common.synthetic import SentencePool, SyntheticCorpus
from bench.common.vectors import BenchCache, seed_database_cache
from bench.quality.__main__ import make_embedder

PARTS = ("e2e", "cached", "database")
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


def cached_ingest(docs: list[LoadedDocument], settings: Settings, kind: str, dataset: str) -> dict[str, Any]:
    """(b): the whole corpus with every vector cached, normally then in bulk mode; preparation alone."""
    embedder = make_embedder(kind, settings)  # never called: every vector is cached
    out: dict[str, Any] = {"documents": len(docs)}
    for label, bulk in (("", False), ("bulk_", True)):
        with scratch_database("ingest_cached") as url:
            services = build_services(
                settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False
            )
            try:
                vectors, real = cached_vectors(settings, kind, dataset, docs, services)
                with services.pool.connection() as conn:
                    seed_database_cache(conn, model=embedder.model_id, vectors=vectors)
                summary = services.ingestion.ingest(docs, bulk=bulk)
                started = time.perf_counter()
                chunks = sum(len(services.ingestion.prepare(d).chunks) for d in docs)
                prepare_seconds = time.perf_counter() - started
            finally:
                services.close()
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


def synthetic_groups(size: int, dims: int, group_chunks: int) -> list[WriteGroup]:
    """size synthetic chunks as prepared rows, cut into write groups the way the service cuts them."""
    groups: list[WriteGroup] = []
    group: WriteGroup = []
    in_group = 0
    for batch in SyntheticCorpus(SentencePool.load(), size, dims).batches():
        vectors = iter(batch.vectors)
        for d in batch.documents:
            rows = [
                documents_repo.ChunkRow(
                    c.position, c.content, [], c.content_hash, c.content_tokens, next(vectors), c.metadata
                )
                for c in d.chunks
            ]
            group.append(
                (
                    documents_repo.DocumentRow(d.external_id, d.title, d.source, d.content_hash, d.metadata),
                    rows,
                )
            )
            in_group += len(rows)
            if in_group >= group_chunks:
                groups.append(group)
                group, in_group = [], 0
    return [*groups, group] if group else groups


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


def database_path(size: int, settings: Settings, model: str, dims: int) -> dict[str, Any]:
    """(c): the same rows through each write path, each path into its own fresh database."""
    groups = synthetic_groups(size, dims, settings.ingest_embed_batch_size)
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


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"# Ingestion throughput ({report['embedder']}, {report['dataset']})",
        markdown_table(
            ["machine", "command", "code"],
            [[f"{m['nproc']} cores, {m['cpu']}", f"`{report['command']}`", report["code"]]],
            "lll",
        ),
    ]
    if "end_to_end" in report:
        lines += render_end_to_end(report["end_to_end"])
    if "cached" in report:
        lines += render_cached(report["cached"])
    if "database_path" in report:
        lines += render_database_path(report["database_path"])
    return "\n\n".join(lines) + "\n"


def _row(label: str, chunks: int, seconds: float) -> list[object]:
    return [
        label,
        chunks,
        f"{seconds:.2f}",
        f"{chunks / seconds:,.0f}" if chunks / seconds >= 100 else f"{chunks / seconds:.2f}",
    ]


def render_end_to_end(a: dict[str, Any]) -> list[str]:
    rows = [
        _row(f"(a) IngestionService, empty cache, first {a['documents']} docs", a["chunks"], a["seconds"]),
        _row("(a) embedder.embed_documents alone, same texts", a["model_texts"], a["model_seconds"]),
    ]
    ratio = a["chunks_per_s"] / a["model_chunks_per_s"]
    return [
        markdown_table(["measurement", "chunks", "seconds", "chunks/s"], rows, "lrrr"),
        f"End to end / model alone: **{ratio:.2f}** (the model is {ratio:.0%} of the time).",
    ]


def render_cached(b: dict[str, Any]) -> list[str]:
    rows = [
        _row(f"(b) IngestionService, every vector cached, {b['documents']} docs", b["chunks"], b["seconds"]),
        _row("(b) the same, bulk mode", b["chunks"], b["bulk_seconds"]),
        _row("(b) preparation alone (chunk, jieba, metadata)", b["chunks"], b["prepare_seconds"]),
    ]
    return [
        markdown_table(["measurement", "chunks", "seconds", "chunks/s"], rows, "lrrr"),
        f"Cached ingest / preparation alone: {b['chunks_per_s'] / b['prepare_chunks_per_s']:.2f} "
        f"(bulk mode: {b['bulk_chunks_per_s'] / b['prepare_chunks_per_s']:.2f}). (b) used "
        f"{b['real_vectors']} vectors from .data/bench-cache and {b['chunks'] - b['real_vectors']} random "
        f"unit vectors; chunks embedded: {b['chunks_embedded']} and {b['bulk_chunks_embedded']}.",
    ]


def render_database_path(c: dict[str, Any]) -> list[str]:
    n, base = c["chunks"], c["chunks"] / c["per_document"]["seconds"]
    bulk, hnsw_only = c["bulk"], c["bulk_hnsw_only"]

    def row(label: str, seconds: float) -> list[object]:
        return [label, f"{seconds:.2f}", f"{n / seconds:,.0f}", f"{n / seconds / base:.1f}x"]

    rows = [
        row("per document: upsert, DELETE, COPY per document (before)", c["per_document"]["seconds"]),
        row("grouped: one upsert, DELETE, COPY per group (now)", c["grouped"]["seconds"]),
        row("bulk: load (HNSW + GIN dropped, term-stats triggers paused)", bulk["load_seconds"]),
        row(
            f"bulk: catch-up (term stats {bulk['term_stats_seconds']:.1f} s, indexes "
            f"{bulk['index_build_seconds']:.1f} s, analyze {bulk['analyze_seconds']:.1f} s, commit)",
            bulk["catch_up_seconds"],
        ),
        row("**bulk: together, until the commit**", bulk["seconds"]),
        row("bulk deferring HNSW only: load", hnsw_only["load_seconds"]),
        row(
            f"bulk deferring HNSW only: catch-up (indexes {hnsw_only['index_build_seconds']:.1f} s)",
            hnsw_only["catch_up_seconds"],
        ),
        row("bulk deferring HNSW only: together", hnsw_only["seconds"]),
    ]
    return [
        f"(c) Database path: {n:,} synthetic chunks ({c['dims']}-d) in {c['documents']:,} documents, "
        f"{c['groups']:,} write groups of ~{c['group_chunks']} chunks, each path into a fresh database.",
        markdown_table(["path", "seconds", "chunks/s", "vs per document"], rows, "lrrr"),
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    parts = set(args.parts.split(","))
    settings = Settings(_env_file=None, embedding_provider="local", llm_provider="extractive")
    docs = load_documents(args.datasets_dir / args.dataset / "corpus.jsonl")
    embedder = make_embedder(args.embedder, settings)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("bench.ingest"),
        "code": code_version(),
        "machine": machine(),
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
        report["database_path"] = database_path(args.db_chunks, settings, embedder.model_id, embedder.dims)
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out} in {report['total_seconds']} s")


if __name__ == "__main__":
    main()
