"""Team collections rank exactly as on one node: the multi-tenant corpus of test_parity.py loaded into
a single-node database and into the cluster, then the same collection built on both through the product
(ann owns it; bo edits it and moves one of his documents in; cai views it; dee is no member). A
collection's documents stay in their owners' tenants, so a member's search reads the tenants holding
them (search_tenants()) and the shards' policies read the member's grants (sql/citus/). Every caller
must see the same rows, ranks and scores on both, narrowed to the collection or not, with the same
term statistics; and a non-member never sees the collection's documents."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

import pytest

from backend.auth.identity import user_identity
from backend.collections import service as collections_service
from backend.composition import Services
from backend.db import migrations
from backend.db.connection import connect
from backend.text import query_terms
from tests.conftest import USER_TABLES
from tests.distributed.corpus import QUERIES, USERS
from tests.distributed.test_parity import CALLERS, HYBRID, MATCH, _load, _rows, _services

ANN, BO, CAI = (user_identity(USERS[name]) for name in ("ann", "bo", "cai"))
IN_COLLECTION = {"ann-0": ANN, "ann-1": ANN, "bo-2": BO}  # external id -> who moves it in (its owner)


@dataclass
class Twin:
    services: Services
    collection: uuid.UUID


@dataclass
class Twins:
    single: Twin
    cluster: Twin


def _team(services: Services) -> Twin:
    db = services.db
    collection = uuid.UUID(str(collections_service.create(db, identity=ANN, name="检索组")["id"]))
    collections_service.put_member(
        db, identity=ANN, collection_id=collection, user_id=USERS["bo"], role="editor"
    )
    collections_service.put_member(
        db, identity=ANN, collection_id=collection, user_id=USERS["cai"], role="viewer"
    )
    for external_id, owner in IN_COLLECTION.items():
        with db.owner() as conn:
            row = conn.execute(
                "select id from documents where external_id = %s and owner_id = %s",
                (external_id, owner.user_id),
            ).fetchone()
        assert row is not None, external_id
        collections_service.move_document(db, identity=owner, document_id=row[0], collection_id=collection)
    return Twin(services, collection)


@pytest.fixture(scope="module")
def twins(fresh_database, database_url: str) -> Iterator[Twins]:
    single_url = fresh_database()
    migrations.upgrade(single_url)
    with closing(_services(single_url)) as single, closing(_services(database_url)) as cluster:
        _load(single)
        _load(cluster)
        yield Twins(_team(single), _team(cluster))
        with connect(database_url, autocommit=True) as conn:
            conn.execute(f"truncate {USER_TABLES}, collections, collection_members restart identity cascade")


NARROWED_HYBRID = HYBRID.replace("20)", "20, collections => %s)")
NARROWED_MATCH = MATCH.replace("%s)", "%s, collections => %s)")


@pytest.mark.parametrize("caller", list(CALLERS))
def test_hybrid_search_with_collections_returns_the_same_rows_ranks_and_scores(twins: Twins, caller: str):
    identity = CALLERS[caller]
    for query in QUERIES:
        text = " ".join(query_terms(query))
        vector = twins.single.services.embedder.embed_query(query)
        single = _rows(twins.single.services, identity, HYBRID, (text, vector))
        assert _rows(twins.cluster.services, identity, HYBRID, (text, vector)) == single, query
        narrowed_single = _rows(
            twins.single.services, identity, NARROWED_HYBRID, (text, vector, [twins.single.collection])
        )
        narrowed = _rows(
            twins.cluster.services, identity, NARROWED_HYBRID, (text, vector, [twins.cluster.collection])
        )
        assert narrowed == narrowed_single, query


@pytest.mark.parametrize("caller", ["backend role", "bo", "cai", "dee"])
def test_match_documents_with_collections_returns_the_same_neighbours(twins: Twins, caller: str):
    identity = CALLERS[caller]
    for query in QUERIES:
        vector = twins.single.services.embedder.embed_query(query)
        assert _rows(twins.cluster.services, identity, MATCH, (vector, 0.0)) == _rows(
            twins.single.services, identity, MATCH, (vector, 0.0)
        ), query
        single = _rows(
            twins.single.services, identity, NARROWED_MATCH, (vector, 0.0, [twins.single.collection])
        )
        cluster = _rows(
            twins.cluster.services, identity, NARROWED_MATCH, (vector, 0.0, [twins.cluster.collection])
        )
        assert cluster == single, query


@pytest.mark.parametrize("caller", ["ann", "bo", "cai", "dee"])
def test_a_members_term_statistics_count_the_collection_as_on_one_node(twins: Twins, caller: str):
    identity = CALLERS[caller]
    for query in QUERIES:
        text = " ".join(query_terms(query))
        terms = "select terms, avg_length from hybrid_search_terms(%s)"
        assert _rows(twins.cluster.services, identity, terms, (text,)) == _rows(
            twins.single.services, identity, terms, (text,)
        ), query


def test_members_find_the_collections_documents_from_every_owner_and_a_non_member_none(twins: Twins):
    def found(caller: str) -> set[str]:
        seen: set[str] = set()
        for query in QUERIES:
            text = " ".join(query_terms(query))
            vector = twins.cluster.services.embedder.embed_query(query)
            seen |= {r[0] for r in _rows(twins.cluster.services, CALLERS[caller], HYBRID, (text, vector))}
        return seen & set(IN_COLLECTION)

    assert found("cai") == set(IN_COLLECTION)  # a viewer: ann's and bo's documents, from two tenants
    assert found("dee") == set()
    with twins.cluster.services.db.as_user(CALLERS["dee"]) as conn:  # type: ignore[arg-type]
        assert conn.execute("select count(*) from documents where collection_id is not null").fetchone() == (
            0,
        )
    with twins.cluster.services.db.as_user(CALLERS["cai"]) as conn:  # type: ignore[arg-type]
        assert conn.execute("select count(*) from documents where collection_id is not null").fetchone() == (
            3,
        )
