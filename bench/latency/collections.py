"""Team collections in the latency corpus (issue 27): the collection cells of the selectivity sweep.

At load time (load.py: the collections first, then each document's collection_id in its COPY, so the
chunks inherit it and are counted in the collection's statistics scope as they are written) documents
of the "other" owners (neither a bench tenant nor the public corpus) are put into collections,
deterministically from an md5 of the document id:
    collection-0.1%, collection-1%, collection-10%   about that share of all chunks each
    team-1 ... team-20                               0.05 % each (1 % together)
and members are added: member-0.1% / member-1% / member-10% view the collection of that name,
member-of-20 views the twenty teams. The sweep's cells (sweep.py) search as these members:
    collection-x%         narrowed to the collection (`collections: [id]`), through RLS
    member-of-20          the default scope of a user in 20 collections (public corpus + 20 teams), RLS
    member-of-20 narrowed the same user narrowed to their 20 collections
"""

from __future__ import annotations

import hashlib
import uuid

import psycopg

from bench.common.synthetic import PUBLIC_SHARE, TENANT_SHARES, tenant_id

COLLECTION_SHARES = {"collection-0.1%": 0.001, "collection-1%": 0.01, "collection-10%": 0.1}
TEAMS = 20
TEAM_SHARE = 0.0005
MEMBER_OF_20 = "member-of-20"
# The share of documents the collections are drawn from: the "other" owners' (synthetic.owner_of).
OTHER_SHARE = 1 - sum(TENANT_SHARES.values()) - PUBLIC_SHARE


def collection_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"pgrag-bench-collection:{name}")


def team_names() -> list[str]:
    return [f"team-{k}" for k in range(1, TEAMS + 1)]


def member_of(name: str) -> str:
    """The bench user who views collection `name` (collection-1% -> member-1%)."""
    return name.replace("collection-", "member-")


def _layout() -> tuple[list[str], list[float]]:
    """The collections in order and the cumulative edges (over [0, 1)) that place a document in each."""
    names = [*COLLECTION_SHARES, *team_names()]
    shares = [*COLLECTION_SHARES.values(), *([TEAM_SHARE] * TEAMS)]
    edges, edge = [], 0.0
    for share in shares:
        edge += share / OTHER_SHARE
        edges.append(edge)
    return names, edges


NAMES, EDGES = _layout()
_BENCH_OWNERS = frozenset(tenant_id(name) for name in TENANT_SHARES)


def placed(doc_id: uuid.UUID, owner_id: uuid.UUID | None) -> uuid.UUID | None:
    """The collection a document of the synthetic corpus goes into, or None: drawn from an md5 of its
    id (independent of the bits owner_of reads), among the "other" owners' documents only."""
    if owner_id is None or owner_id in _BENCH_OWNERS:
        return None
    u = int(hashlib.md5(str(doc_id).encode()).hexdigest()[:15], 16) / 2**60
    for name, edge in zip(NAMES, EDGES, strict=True):
        if u < edge:
            return collection_id(name)
    return None


def create(conn: psycopg.Connection) -> None:
    """The collections and their members, before the load (as the tables' owner, in the caller's
    transaction). Fixed ids, so that a reused database and the sweep agree: the trigger that draws
    ids rests meanwhile."""
    owner = tenant_id("collection-owner")
    conn.execute("alter table public.collections disable trigger collections_before_write")
    conn.execute(
        "insert into public.collections (id, owner_id, name) "
        "select unnest(%s::uuid[]), %s, unnest(%s::text[]) on conflict (id) do nothing",
        ([collection_id(n) for n in NAMES], owner, NAMES),
    )
    conn.execute("alter table public.collections enable trigger collections_before_write")
    members = [(collection_id(n), tenant_id(member_of(n))) for n in COLLECTION_SHARES]
    members += [(collection_id(n), tenant_id(MEMBER_OF_20)) for n in team_names()]
    conn.execute(
        "insert into public.collection_members (collection_id, user_id, role) "
        "select c, u, 'viewer' from unnest(%s::uuid[], %s::uuid[]) as m(c, u) on conflict do nothing",
        ([c for c, _ in members], [u for _, u in members]),
    )
