"""Every development question's prefetched candidates, with what the reranker reads, kept on disk.

The product's pipeline runs once per dataset (scratch database, IngestionService, cached local
vectors, RetrievalService.search with dynamic=False); each candidate's raw scores go to
.data/bench-cache/rerank/<dataset>.json, so fitting and evaluating policies needs no database.
The baselines (vector leg, full-text leg, BM25) run on the same database and vectors.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import psycopg

from backend.auth.identity import LOCAL_IDENTITY
from backend.composition import Services
from backend.config import Settings
from backend.db.repositories import retrieval as retrieval_repo
from backend.embeddings import Embedder, LocalEmbedder
from backend.embeddings.base import prepare_texts, unit_rows
from backend.errors import InvalidInput
from backend.ingest.loaders import load_path
from backend.ingest.prepare import sha256
from backend.retrieval.params import HybridParams
from backend.search.types import SearchRequest
from backend.text import clean_query, query_terms
from bench.common import CACHE_DIR, log
from bench.common.beir import Dataset, load_dataset
from bench.common.db import scratch_database, services
from bench.common.report import code_version
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached

STUDY_DIR = CACHE_DIR / "rerank"
TOP_K = 10  # bench.quality ranks 10 chunks per question
BASELINES = ("vector", "fulltext", "bm25", "hybrid_norerank")


@dataclass
class StudyCandidate:
    """One prefetched chunk of one question (satisfies backend.retrieval.rerank.Candidate)."""

    chunk_id: int
    document: str  # external id
    content_hash: str
    title: str
    content: str
    content_tokens: str
    similarity: float | None
    full_text_score: float | None
    rrf_score: float | None
    vector_rank: int | None
    full_text_rank: int | None


@dataclass
class StudyQuestion:
    qid: str
    text: str
    terms: list[str]
    gold: dict[str, int]
    candidates: list[StudyCandidate]  # in prefetch order (RRF), as the reranker receives them
    idf: dict[str, float] = field(default_factory=dict)  # hybrid_search_terms' idf per term
    baselines: dict[str, list[str]] = field(default_factory=dict)  # variant -> ranked document ids


@dataclass
class StudySet:
    name: str
    code: str
    embedder: str
    documents: int
    chunks: int
    questions: list[StudyQuestion]


def path_for(name: str, embedder: str, prefetch_k: int) -> Path:
    return STUDY_DIR / f"prefetch{prefetch_k}" / f"{embedder.replace('@', '_')}-{name}.json"


def load_or_collect(name: str, inner: Embedder, settings: Settings, args: argparse.Namespace) -> StudySet:
    """The candidates of settings.rag_prefetch_k per question (what /search and bench.quality rerank)."""
    path = path_for(name, inner.model_id, settings.rag_prefetch_k)
    if path.exists() and not args.recollect:
        return _read(path)
    study = collect(load_dataset(name, args.datasets_dir), inner, settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(study), ensure_ascii=False), encoding="utf-8")
    log(f"  {name}: wrote {path}")
    return study


def collect(dataset: Dataset, inner: Embedder, settings: Settings) -> StudySet:
    embedder = CachedEmbedder(inner, BenchCache(inner.model_id, dataset.name))
    log(f"{dataset.name}: collecting {len(dataset.queries)} questions")
    with scratch_database(dataset.name) as url, services(url, settings, embedder) as app:
        ingest_cached(app, load_path(dataset.corpus_path), dataset.name)
        prefill_queries(inner, embedder.cache, dataset)
        vectors = [embedder.embed_query(clean_query(text)) for _qid, text in dataset.queries]
        embedder.cache.save()
        with app.pool.connection() as conn:
            documents = conn.execute("select count(*) from documents").fetchone()
            chunk_rows = conn.execute(
                "select c.id, d.external_id, c.content_tokens from chunks c "
                "join documents d on d.id = c.document_id order by c.id"
            ).fetchall()
        bm25 = bm25s.BM25()
        bm25.index([r[2].split() for r in chunk_rows], show_progress=False)
        questions = []
        for n, ((qid, text), vector) in enumerate(zip(dataset.queries, vectors, strict=True), 1):
            question = _question(app, qid, text, dataset.qrels[qid])
            question.baselines = _baselines(app, text, vector, bm25, [r[1] for r in chunk_rows])
            questions.append(question)
            if n % 500 == 0:
                log(f"  {dataset.name}: {n}/{len(dataset.queries)} questions")
    assert documents is not None
    return StudySet(
        dataset.name, code_version(), inner.model_id, int(documents[0]), len(chunk_rows), questions
    )


def prefill_queries(inner: Embedder, cache: BenchCache, dataset: Dataset, batch: int = 32) -> None:
    """Embed the uncached questions in batches: the local model takes ~0.5 s per question in a batch
    of 32 and several seconds one at a time on a busy 2-core machine, with bit-identical vectors."""
    if not isinstance(inner, LocalEmbedder):
        return
    texts = list(dict.fromkeys(clean_query(t) for _qid, t in dataset.queries))
    todo = [t for t in texts if sha256(t) not in cache.queries]
    for start in range(0, len(todo), batch):
        part = todo[start : start + batch]
        with inner._lock:  # the model's own batch call; embed_query takes one text
            vectors = unit_rows(inner._loaded().query(prepare_texts(part)))
        cache.queries.update({sha256(t): v.astype(np.float32) for t, v in zip(part, vectors, strict=True)})
        cache.save()
        log(f"  {dataset.name}: {start + len(part)}/{len(todo)} questions embedded in batches")


def _question(app: Services, qid: str, text: str, gold: dict[str, int]) -> StudyQuestion:
    try:
        result = app.retrieval.search(
            SearchRequest(text, top_k=TOP_K, dynamic=False), identity=LOCAL_IDENTITY
        )
    except InvalidInput:
        return StudyQuestion(qid, text, [], gold, [])
    terms = result.diagnostics.query_terms
    # The reranker receives rows in prefetch order; rrf_score desc, chunk id breaks ties as in SQL.
    rows = sorted(result.candidates, key=lambda c: (-(c.rrf_score or 0.0), c.chunk_id))
    candidates = [
        StudyCandidate(
            c.chunk_id,
            c.external_id,
            c.content_hash,
            c.title,
            c.content,
            c.content_tokens,
            c.similarity,
            c.full_text_score,
            c.rrf_score,
            c.vector_rank,
            c.full_text_rank,
        )
        for c in rows
    ]
    return StudyQuestion(
        qid, text, terms, gold, candidates, {t: idf for t, (_df, idf) in result.term_stats.items()}
    )


def _baselines(
    app: Services, text: str, vector: np.ndarray, bm25: bm25s.BM25, chunk_docs: list[str]
) -> dict[str, list[str]]:
    """bench.quality's baselines on the same database and vectors: document ids in rank order."""
    params = HybridParams.from_settings(app.settings)
    terms = query_terms(text)
    model = app.embedder.model_id
    out: dict[str, list[str]] = {}
    with app.pool.connection() as conn:
        out["vector"] = _ids(
            retrieval_repo.match_documents(
                conn,
                query_embedding=vector,
                match_count=TOP_K,
                filter={},
                embedding_model=model,
                params=dataclasses.replace(params, min_similarity=-1.0),
            )
        )
        out["fulltext"] = _hybrid(conn, terms, None, None, params.for_mode("fulltext"))
        out["hybrid_norerank"] = _hybrid(conn, terms, vector, model, params)
    out["bm25"] = []
    if terms:
        docs, scores = bm25.retrieve([terms], k=min(TOP_K, len(chunk_docs)), show_progress=False)
        out["bm25"] = [chunk_docs[i] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]
    return out


def _hybrid(
    conn: psycopg.Connection,
    terms: list[str],
    vector: np.ndarray | None,
    model: str | None,
    params: HybridParams,
) -> list[str]:
    if not terms and vector is None:
        return []
    return _ids(
        retrieval_repo.hybrid_search(
            conn,
            query_text=" ".join(terms),
            query_embedding=vector,
            match_count=TOP_K,
            filter={},
            embedding_model=model,
            params=params,
        )
    )


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["external_id"] for r in rows]


def _read(path: Path) -> StudySet:
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = [
        StudyQuestion(
            **{k: v for k, v in q.items() if k != "candidates"},
            candidates=[StudyCandidate(**c) for c in q["candidates"]],
        )
        for q in data.pop("questions")
    ]
    return StudySet(**data, questions=questions)
