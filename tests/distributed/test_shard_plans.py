"""The vector leg's plan on every shard: walk HNSW when each tenant's part of the scope is large.

One sorting setting serves every shard of a search (SET LOCAL, the form that reaches the workers), so
hybrid_search and match_documents turn sorting off only when search_parts_walkable() finds every
tenant in scope holding at least the limit of chunks the caller may read, and set it back once their
statement has run: the rest of the request's transaction plans as before.
"""

from __future__ import annotations

import psycopg
import pytest

from backend.auth.identity import SERVICE_IDENTITY, user_identity
from backend.db.identity import apply_identity
from tests.distributed.corpus import USERS, corpus

WALKABLE = "select public.search_parts_walkable(public.search_tenants(), %s)"


@pytest.fixture
def loaded(services, db):
    for owned in corpus():
        services.ingestion.ingest(owned.documents, identity=owned.identity)
    return db


def parts(db: psycopg.Connection, user) -> list[int]:
    """Chunks the user may read per tenant in their scope: the public tenant's and their own."""
    rows = db.execute(
        "select tenant_id, count(*) from chunks where visibility = 'public' or owner_id = %s "
        "group by tenant_id",
        (user,),
    ).fetchall()
    return sorted(n for _tenant, n in rows)


def test_every_part_must_hold_the_limit(loaded):
    ann = USERS["ann"]
    smallest = parts(loaded, ann)[0]
    assert len(parts(loaded, ann)) == 2
    with loaded.transaction():
        apply_identity(loaded, user_identity(ann))
        assert loaded.execute(WALKABLE, (smallest,)).fetchone() == (True,)
        assert loaded.execute(WALKABLE, (smallest + 1,)).fetchone() == (False,)
    with loaded.transaction():
        apply_identity(loaded, SERVICE_IDENTITY)  # every tenant: no tenant filter to underestimate
        assert loaded.execute(WALKABLE, (10**6,)).fetchone() == (True,)


@pytest.mark.parametrize(
    "search",
    [
        "select count(*) from hybrid_search('检索', array_fill(0.05, array[384])::vector, 5, "
        "exact_scan_threshold => 1)",
        "select count(*) from match_documents(array_fill(0.05, array[384])::vector, 5, -1, "
        "exact_scan_threshold => 1)",
    ],
)
def test_a_search_that_walks_every_shard_leaves_sorting_as_it_was(loaded, search):
    ann = USERS["ann"]
    with loaded.transaction():
        apply_identity(loaded, user_identity(ann))
        assert loaded.execute(WALKABLE, (1,)).fetchone() == (True,)
        assert loaded.execute(search).fetchone()[0] > 0
        assert loaded.execute("show enable_sort").fetchone() == ("on",)
        loaded.execute("set local enable_sort = off")
        assert loaded.execute(search).fetchone()[0] > 0
        assert loaded.execute("show enable_sort").fetchone() == ("off",)
