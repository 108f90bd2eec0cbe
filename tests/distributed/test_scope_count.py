"""A user's scope that the statistics already know is too large is not counted on the cluster.

Without a filter a user's scope is every chunk of their tenants that they may read, and corpus_stats
holds that number per tenant and visibility scope. search_scope_scan sums it and, above the limit,
returns at once (the search walks HNSW). The caller's scopes must be read on the coordinator: inside
the distributed statement Citus evaluated caller_visibility_scopes() on the workers, where the definer
function's connection has no request role, so every user's scope summed to 0 chunks and each search
paid a bounded count of limit + 1 ids on its shards before the walk (~18 ms of a 1M-chunk search).
"""

from __future__ import annotations

import psycopg

from backend.auth.identity import user_identity
from backend.db.identity import apply_identity
from tests.distributed.corpus import USERS, corpus

SCAN = "select ids, nearest from public.search_scope_scan(%s, null, 4, null, 10)"


def remote_commands(db: psycopg.Connection, user, max_rows: int) -> tuple[tuple, list[str]]:
    """(search_scope_scan's ids and nearest, the commands the coordinator sent to the workers)."""
    notes: list[str] = []
    db.add_notice_handler(lambda d: notes.append(d.message_primary or ""))
    with db.transaction():
        apply_identity(db, user_identity(user))
        db.execute("set local citus.log_remote_commands = on")
        row = db.execute(SCAN, (max_rows,)).fetchone()
    assert row is not None
    return row, [n for n in notes if n.startswith("issuing")]


def test_a_scope_the_statistics_know_is_large_is_not_counted(services, db):
    for owned in corpus():
        services.ingestion.ingest(owned.documents, identity=owned.identity)
    ann = USERS["ann"]
    readable = db.execute(
        "select count(*) from chunks where visibility = 'public' or owner_id = %s", (ann,)
    ).fetchone()[0]
    assert readable > 4

    (ids, nearest), sent = remote_commands(db, ann, 2)
    assert (ids, nearest) == (None, None)
    assert not [c for c in sent if "select id from public.chunks" in c.lower()], sent

    # Within the limit the scope is counted, and every readable chunk named.
    (ids, _), sent = remote_commands(db, ann, readable)
    assert len(ids) == readable
    assert [c for c in sent if "select id from public.chunks" in c.lower()]
