"""The layout db distribute makes, and where a search runs: a tenant's rows on its shard, a tenant's
search one statement on that shard (router), a search with the shared corpus on two shards, the
service's on every shard; rows that would land on the wrong shard are refused with a clear error."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from backend.auth.identity import SERVICE_IDENTITY, user_identity
from backend.db.connection import connect
from backend.db.distribute import distribute
from backend.db.identity import apply_identity
from backend.db.repositories import conversations as conversations_repo
from backend.text import query_terms
from tests.distributed.corpus import USERS
from tests.factories import insert_document, loaded_document

A, B = USERS["ann"], USERS["bo"]
PUBLIC_TENANT = uuid.UUID(int=0)
TENANT_TABLES = {
    "documents",
    "chunks",
    "conversations",
    "messages",
    "research_runs",
    "term_stats",
    "corpus_stats",
}


def test_user_tables_are_distributed_by_tenant_in_one_colocation_group(db):
    rows = db.execute(
        "select table_name::text, distribution_column, colocation_id from citus_tables "
        "where citus_table_type = 'distributed'"
    ).fetchall()
    by_table = {r[0]: (r[1], r[2]) for r in rows}
    assert {t: by_table[t][0] for t in TENANT_TABLES} == dict.fromkeys(TENANT_TABLES, "tenant_id")
    assert len({by_table[t][1] for t in TENANT_TABLES}) == 1
    # The caches are per caller since migration 020: each on its caller's shard, beside the tenant's rows.
    assert by_table["embedding_cache"] == ("scope", by_table["documents"][1])
    assert by_table["web_search_cache"] == ("caller", by_table["documents"][1])
    # Coordinator tables: the migrations' bookkeeping, the API keys looked up there per request, and the
    # ingestion job queue (claimed across tenants with FOR UPDATE SKIP LOCKED).
    assert db.execute(
        "select count(*) from citus_tables where table_name in ('alembic_version'::regclass, "
        "'api_keys'::regclass, 'ingest_jobs'::regclass, 'ingest_job_files'::regclass)"
    ).fetchone() == (0,)


def test_a_users_rows_live_on_their_tenants_shard(services, db):
    services.ingestion.ingest([loaded_document("a", "袋鼠生活在澳洲的草原上。")], identity=user_identity(A))
    with services.db.as_user(user_identity(A)) as conn:
        conversation = conversations_repo.create_conversation(conn, owner_id=A, title="袋鼠")
        conversations_repo.add_message(
            conn, conversation_id=conversation, role="user", content="袋鼠在哪里？"
        )
    for table in ("documents", "chunks", "conversations", "messages", "term_stats", "corpus_stats"):
        assert db.execute(f"select distinct tenant_id from {table}").fetchall() == [(A,)], table
    nodes = db.execute(
        """
        select distinct s.nodeport
        from unnest(array['documents', 'chunks', 'conversations', 'messages', 'term_stats']) as t(name)
        join citus_shards s on s.table_name = t.name::regclass
             and s.shardid = get_shard_id_for_distribution_column(t.name::regclass, %s)
        """,
        (A,),
    ).fetchall()
    assert len(nodes) == 1  # every row of the tenant: co-located shards on one node


@contextmanager
def remote_commands(conn: psycopg.Connection) -> Iterator[list[str]]:
    """The statements the coordinator sends to the workers meanwhile (citus.log_remote_commands)."""
    sent: list[str] = []

    def keep(diag: psycopg.errors.Diagnostic) -> None:
        if (diag.message_primary or "").startswith("issuing "):
            sent.append(diag.message_primary or "")

    conn.add_notice_handler(keep)
    conn.execute(
        "select set_config('citus.log_remote_commands', 'on', true), "
        "set_config('client_min_messages', 'log', true)"
    )
    try:
        yield sent
    finally:
        conn.execute("select set_config('citus.log_remote_commands', 'off', true)")
        conn.remove_notice_handler(keep)


def chunk_shards(commands: list[str]) -> set[int]:
    """The shards of chunks the search statement read: its legs (BM25 rank, vector distance) and the
    final join (the similarity), not the term statistics it reads first."""
    statement = [c for c in commands if "term_weighted_rank" in c or "<=>" in c]
    return {int(s) for c in statement for s in re.findall(r"\bchunks_(\d+)\b", c)}


def shard_of(db: psycopg.Connection, tenant: uuid.UUID) -> int:
    row = db.execute("select get_shard_id_for_distribution_column('chunks', %s)", (tenant,)).fetchone()
    assert row is not None
    return int(row[0])


def search_commands(services, identity, query: str) -> list[str]:
    text = " ".join(query_terms(query))
    vector = services.embedder.embed_query(query)
    with services.db.as_user(identity) as conn, remote_commands(conn) as sent:
        rows = conn.execute("select id from hybrid_search(%s, %s, 5)", (text, vector)).fetchall()
    assert rows
    return sent


def test_a_tenants_search_is_one_statement_on_its_shard(services, db):
    """Without a shared corpus a user's search reads one tenant: Citus routes the whole statement --
    both legs, the fusion and the final join -- to that tenant's shard."""
    services.ingestion.ingest([loaded_document("a", "袋鼠生活在澳洲的草原上。")], identity=user_identity(A))
    services.ingestion.ingest([loaded_document("b", "袋鼠也出现在动物园里。")], identity=user_identity(B))
    sent = search_commands(services, user_identity(A), "袋鼠生活在哪里")
    assert chunk_shards(sent) == {shard_of(db, A)}
    fused = [c for c in sent if "row_number()" in c]  # the ranking and fusion windows
    assert len(fused) == 1
    assert "term_weighted_rank" in fused[0]  # legs and fusion: one statement, on the shard


def test_with_a_shared_corpus_a_user_reads_two_shards_and_the_service_every_shard(services, db):
    services.ingestion.ingest([loaded_document("p", "袋鼠是有袋类动物。")], identity=None)
    services.ingestion.ingest([loaded_document("a", "袋鼠生活在澳洲的草原上。")], identity=user_identity(A))
    user = search_commands(services, user_identity(A), "袋鼠生活在哪里")
    assert chunk_shards(user) == {shard_of(db, A), shard_of(db, PUBLIC_TENANT)}
    assert not [c for c in user if "row_number()" in c]  # ranked and fused on the coordinator
    every = {
        int(r[0])
        for r in db.execute("select shardid from citus_shards where table_name = 'chunks'::regclass")
    }
    assert chunk_shards(search_commands(services, SERVICE_IDENTITY, "袋鼠生活在哪里")) == every


def test_a_row_for_another_tenant_is_refused_and_nothing_is_stored(db):
    """The backend's own role writing for a user must name the tenant: by default it writes the public
    tenant, and the tenant must be the owner's (otherwise the row would sit on another tenant's shard)."""
    with pytest.raises(psycopg.errors.CheckViolation, match="documents_tenant_is_owner"):
        insert_document(db, owner_id=A)
    with db.transaction():
        apply_identity(db, SERVICE_IDENTITY)
        with pytest.raises(psycopg.errors.CheckViolation, match="documents_public_is_the_public_tenant"):
            db.execute(
                "insert into documents (owner_id, tenant_id, external_id, content_hash, visibility) "
                "values (%s, %s, 'x', 'h', 'public')",
                (A, A),
            )
    assert db.execute("select count(*) from documents").fetchone() == (0,)


def test_db_distribute_again_changes_nothing(database_url: str):
    def layout() -> list[tuple]:
        with connect(database_url, autocommit=True) as conn:
            return conn.execute(
                "select table_name::text, distribution_column, colocation_id, shard_count from citus_tables "
                "order by 1"
            ).fetchall()

    before = layout()
    distribute(database_url)
    assert layout() == before
