"""The cluster ranks exactly as one node: one multi-tenant corpus loaded into a single-node database and
into the cluster the same way (the product's ingestion, the same identities, the same order), then the
same searches on both, as the backend's role (every tenant: the search fans out to every shard and the
coordinator fuses), as the service role, and as each user (public + own: two tenants, two shards).
Chunk ids come from one sequence in both and the corpus is ingested in the same order, so even the
tie-breaks compare; scores must agree to the last bits float arithmetic allows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, nullcontext
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from backend import PROJECT_ROOT
from backend.auth import Identity
from backend.auth.identity import SERVICE_IDENTITY, user_identity
from backend.composition import Services, build_services
from backend.config import Settings
from backend.db import migrations
from backend.db.connection import connect
from backend.search.types import SearchRequest
from backend.testing import HashingEmbedder, ScriptedLLM
from backend.text import query_terms
from tests.conftest import USER_TABLES
from tests.distributed.corpus import QUERIES, USERS, corpus

CALLERS: dict[str, Identity | None] = {
    "backend role": None,
    "service role": SERVICE_IDENTITY,
    **{name: user_identity(user) for name, user in USERS.items()},
}


@dataclass
class Twins:
    single: Services
    cluster: Services


def _services(url: str) -> Services:
    settings = Settings(
        _env_file=None,
        embedding_provider="local",
        llm_provider="extractive",
        score_policies_dir=PROJECT_ROOT / "tests" / "fixtures" / "policies",
    )
    return build_services(
        settings, database_url=url, embedder=HashingEmbedder(), llm=ScriptedLLM(), migrate=False
    )


def _load(services: Services) -> None:
    for owned in corpus():
        summary = services.ingestion.ingest(owned.documents, identity=owned.identity)
        assert summary.counts["failed"] == 0, summary.failures


@pytest.fixture(scope="module")
def twins(fresh_database, database_url: str) -> Iterator[Twins]:
    single_url = fresh_database()
    migrations.upgrade(single_url)
    with closing(_services(single_url)) as single, closing(_services(database_url)) as cluster:
        _load(single)
        _load(cluster)
        yield Twins(single, cluster)
        with connect(database_url, autocommit=True) as conn:
            conn.execute(f"truncate {USER_TABLES} restart identity cascade")


def _as(services: Services, identity: Identity | None) -> AbstractContextManager[psycopg.Connection]:
    if identity is None:
        return services.db.owner()
    return services.db.as_user(identity)


def _rows(services: Services, identity: Identity | None, sql: str, params: tuple[Any, ...]) -> list[tuple]:
    """The rows keyed by (external_id, position), ids left out (each database numbers its own)."""
    with _as(services, identity) as conn, conn.transaction() if identity is None else nullcontext():
        rows = conn.execute(sql, params).fetchall()
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]


HYBRID = (
    "select external_id, position, full_text_rank, vector_rank, rrf_score, full_text_score, similarity, "
    "scope_count from hybrid_search(%s, %s, 20)"
)
MATCH = "select external_id, position, vector_rank, similarity, scope_count from match_documents(%s, 20, %s)"


@pytest.mark.parametrize("caller", list(CALLERS))
def test_hybrid_search_returns_the_same_rows_ranks_and_scores(twins: Twins, caller: str):
    identity = CALLERS[caller]
    for query in QUERIES:
        text = " ".join(query_terms(query))
        vector = twins.single.embedder.embed_query(query)
        single = _rows(twins.single, identity, HYBRID, (text, vector))
        assert single, query  # the corpus answers every query on one node
        assert _rows(twins.cluster, identity, HYBRID, (text, vector)) == single, query


@pytest.mark.parametrize("caller", ["backend role", "ann"])
def test_match_documents_returns_the_same_neighbours(twins: Twins, caller: str):
    identity = CALLERS[caller]
    for query in QUERIES:
        vector = twins.single.embedder.embed_query(query)
        single = _rows(twins.single, identity, MATCH, (vector, 0.0))
        assert _rows(twins.cluster, identity, MATCH, (vector, 0.0)) == single, query


def test_term_statistics_are_the_corpus_wide_ones(twins: Twins):
    for query in QUERIES:
        text = " ".join(query_terms(query))
        terms = "select terms, avg_length from hybrid_search_terms(%s)"
        assert _rows(twins.cluster, None, terms, (text,)) == _rows(twins.single, None, terms, (text,))


@pytest.mark.parametrize("caller", ["service role", "bo"])
def test_the_search_pipeline_answers_the_same(twins: Twins, caller: str):
    """POST /search's pipeline (prefetch, rerank, dynamic cut) end to end: same chunks, same scores."""
    identity = CALLERS[caller]
    assert identity is not None
    for query in QUERIES:
        request = SearchRequest(query=query, top_k=5)
        single = twins.single.retrieval.search(request, identity=identity)
        cluster = twins.cluster.retrieval.search(request, identity=identity)

        def ranked(result: Any) -> list[tuple]:
            return [(c.external_id, c.position, round(c.final_score, 9)) for c in result.results]

        assert ranked(cluster) == ranked(single), query
        for key in ("confidence_level", "best_overall_score", "web_fallback", "need_hitl"):
            assert cluster.confidence[key] == single.confidence[key], (query, key)


def test_a_user_search_reads_only_their_own_and_the_public_tenant(twins: Twins):
    ann = CALLERS["ann"]
    found = set()
    for query in QUERIES:
        text = " ".join(query_terms(query))
        vector = twins.cluster.embedder.embed_query(query)
        found |= {r[0].split("-")[0] for r in _rows(twins.cluster, ann, HYBRID, (text, vector))}
    assert found <= {"public", "ann"}
    assert found == {"public", "ann"}  # both tenants answer some query
