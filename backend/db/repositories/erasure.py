"""Erasure on a Citus cluster: the copies other users hold of a deleted or moved document.

On one node the change's own triggers (migrations 018, 024) erase every copy in its transaction, and
none of these functions exists in the database: each call here is then a no-op. On a cluster the
copies other users hold live on other shards (docs/scaling.md, "Erasure on the cluster").
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg


def queue_erasure(conn: psycopg.Connection, *, ids: Sequence[uuid.UUID]) -> None:
    """In the transaction that deletes documents other users cite, or moves one out of a collection: on
    a Citus cluster, queue them for erase_copies_elsewhere (sql/citus/erasure_outbox.sql), so that a
    crash before that second transaction leaves work that drain_erasures finishes, not copies. Nothing
    elsewhere (the change's own trigger erases the copies; the function does not exist)."""
    if ids and _cluster_function(conn, "public.queue_erasure(uuid[])"):
        conn.execute("select public.queue_erasure(%s)", (list(ids),))


def erase_copies_elsewhere(conn: psycopg.Connection, *, ids: Sequence[uuid.UUID]) -> None:
    """After deleting documents other users cite (public, or in a team collection), or moving one out of
    a collection: on a Citus cluster, erase them from the stored answers of every user who may no longer
    read them, on their shards (sql/citus/erase_copies_elsewhere.sql), and finish any erasure a crash
    interrupted (drain_erasures). Elsewhere the delete's or the move's own trigger (migrations 018, 024)
    already did, and the function does not exist. Its own transaction, after the change's: Citus
    refuses, in one transaction, a definer's access to shards the user's statement just modified."""
    if ids and _cluster_function(conn, "public.erase_copies_elsewhere(uuid[])"):
        conn.execute("select public.erase_copies_elsewhere(%s)", (list(ids),))
        conn.execute("select public.drain_erasures()")  # db distribute installs both


def drain_erasures(conn: psycopg.Connection) -> int:
    """On a Citus cluster: finish the erasures queued by changes whose second transaction never ran
    (a crash, a lost connection); the number of documents. 0 elsewhere. Called at start-up too."""
    if not _cluster_function(conn, "public.drain_erasures()"):
        return 0
    row = conn.execute("select public.drain_erasures()").fetchone()
    return int(row[0]) if row else 0


def _cluster_function(conn: psycopg.Connection, signature: str) -> bool:
    row = conn.execute("select to_regprocedure(%s) is not null", (signature,)).fetchone()
    return bool(row and row[0])
