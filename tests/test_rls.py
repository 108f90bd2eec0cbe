"""Row-level security one level below the API: SQL sessions as `authenticated` with a user's claims.

This is what PostgREST runs on Supabase, and what backend/db/identity.py runs for each request: the
same policies must keep user A's private rows away from user B in every table and through the
retrieval functions, and keep B from writing anything that is not B's own and private.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
import pytest
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from backend.auth import LOCAL_IDENTITY, SERVICE_IDENTITY, Identity, user_identity
from backend.db.connection import configure_connection
from backend.db.identity import apply_identity, user_transaction
from tests.factories import (
    acting_as,
    axis,
    insert_chunk,
    insert_conversation,
    insert_document,
    insert_message,
)

A = user_identity(uuid.UUID("aaaaaaaa-0000-4000-8000-000000000001"))
B = user_identity(uuid.UUID("bbbbbbbb-0000-4000-8000-000000000002"))


@dataclass
class World:
    a_doc: uuid.UUID
    a_chunk: int
    b_doc: uuid.UUID
    b_chunk: int
    public_doc: uuid.UUID
    public_chunk: int
    a_conversation: uuid.UUID
    a_message: uuid.UUID


@pytest.fixture
def world(db) -> World:
    """A's private document about 袋鼠 (nearest to axis 0), B's about 考拉, a public one about 澳洲."""
    a_doc = insert_document(db, title="A 的笔记", owner_id=A.user_id)
    b_doc = insert_document(db, title="B 的笔记", owner_id=B.user_id)
    public_doc = insert_document(db, title="公开", visibility="public")
    conversation = insert_conversation(db, owner_id=A.user_id, title="A 的对话")
    return World(
        a_doc=a_doc,
        a_chunk=insert_chunk(db, a_doc, "尤金袋鼠 秘密 笔记", axis(0), tokens="尤金 袋鼠 秘密 笔记"),
        b_doc=b_doc,
        b_chunk=insert_chunk(db, b_doc, "考拉 笔记", axis(1), tokens="考拉 笔记"),
        public_doc=public_doc,
        public_chunk=insert_chunk(db, public_doc, "澳洲 袋鼠 动物", axis(2), tokens="澳洲 袋鼠 动物"),
        a_conversation=conversation,
        a_message=insert_message(db, conversation, "A 的秘密问题"),
    )


@contextmanager
def as_anon(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    with conn.transaction(force_rollback=True):
        conn.execute(
            "select set_config('role', 'anon', true), set_config('request.jwt.claims', %s, true)",
            ('{"role": "anon"}',),
        )
        yield conn


def ids(conn: psycopg.Connection, sql: str, params: Sequence[object] | None = None) -> set:
    return {row[0] for row in conn.execute(sql, params).fetchall()}


def hybrid_ids(conn: psycopg.Connection, text: str, vector, **kw) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            "select id from hybrid_search(%s, %s, 10, filter => %s)",
            (text, vector, Jsonb(kw.get("filter", {}))),
        ).fetchall()
    ]


# --- reading ------------------------------------------------------------------------------------------


def test_b_reads_none_of_as_rows_in_any_table(db, world):
    with acting_as(db, B):
        assert ids(db, "select id from documents") == {world.b_doc, world.public_doc}
        assert ids(db, "select id from chunks") == {world.b_chunk, world.public_chunk}
        assert ids(db, "select id from conversations") == set()
        assert ids(db, "select id from messages") == set()
        assert ids(db, "select id from documents where id = %s", (world.a_doc,)) == set()
        assert ids(db, "select id from chunks where document_id = %s", (world.a_doc,)) == set()
    with acting_as(db, A):
        assert ids(db, "select id from documents") == {world.a_doc, world.public_doc}
        assert ids(db, "select id from chunks") == {world.a_chunk, world.public_chunk}
        assert ids(db, "select id from conversations") == {world.a_conversation}
        assert ids(db, "select id from messages") == {world.a_message}


def test_hybrid_search_and_match_documents_return_only_visible_chunks(db, world):
    # The query is A's chunk exactly, in both legs: B must still never get it.
    with acting_as(db, B):
        hybrid = hybrid_ids(db, "尤金 袋鼠 秘密", axis(0))
        assert world.a_chunk not in hybrid
        assert set(hybrid) == {world.public_chunk, world.b_chunk}
        text_only = hybrid_ids(db, "尤金 袋鼠 秘密", None)
        assert text_only == [world.public_chunk]
        nearest = ids(db, "select id from match_documents(%s, 10, -1)", (axis(0),))
        assert nearest == {world.public_chunk, world.b_chunk}
    with acting_as(db, A):
        assert hybrid_ids(db, "尤金 袋鼠 秘密", axis(0))[0] == world.a_chunk
        assert hybrid_ids(db, "尤金 袋鼠 秘密", None)[0] == world.a_chunk
        assert db.execute("select id from match_documents(%s, 1)", (axis(0),)).fetchone() == (world.a_chunk,)


def test_the_full_text_match_helper_applies_the_same_rule_when_called_directly(db, world):
    with acting_as(db, B):
        assert ids(db, "select * from hybrid_search_visible_matches(or_tsquery('袋鼠 笔记'))") == {
            world.public_chunk,
            world.b_chunk,
        }
    with acting_as(db, SERVICE_IDENTITY):
        assert ids(db, "select * from hybrid_search_visible_matches(or_tsquery('袋鼠 笔记'))") == {
            world.a_chunk,
            world.b_chunk,
            world.public_chunk,
        }
    with as_anon(db), pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select * from hybrid_search_visible_matches(or_tsquery('袋鼠'))")


def test_anon_sees_nothing_even_with_supabases_default_grants(db, world):
    tables = (
        "documents",
        "chunks",
        "conversations",
        "messages",
        "term_stats",
        "corpus_stats",
        "embedding_cache",
        "research_runs",
    )
    with db.transaction(force_rollback=True):
        # Supabase grants anon every privilege on new public tables by default; RLS must still hold.
        db.execute(f"grant select on {', '.join(tables)} to anon")
        with as_anon(db):
            for table in tables:
                assert db.execute(f"select count(*) from {table}").fetchone() == (0,), table
            with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
                db.execute("select * from hybrid_search_visible_matches(or_tsquery('袋鼠'))")
            # Not even pgvector's functions resolve for anon (no usage on the extensions schema).
            with (
                pytest.raises((psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction)),
                db.transaction(),
            ):
                hybrid_ids(db, "袋鼠", axis(0))


def test_public_documents_are_visible_to_every_user_and_the_local_one(db, world):
    for identity in (A, B, LOCAL_IDENTITY):
        with acting_as(db, identity):
            assert world.public_chunk in hybrid_ids(db, "澳洲", axis(2))
            assert ids(db, "select id from documents where visibility = 'public'") == {world.public_doc}


def test_the_service_role_and_the_backend_role_see_every_row(db, world):
    everything = {world.a_doc, world.b_doc, world.public_doc}
    with acting_as(db, SERVICE_IDENTITY):
        assert ids(db, "select id from documents") == everything
        assert world.a_chunk in hybrid_ids(db, "尤金 秘密", axis(0))
    assert ids(db, "select id from documents") == everything  # no identity: the owner, as the CLI runs


# --- writing ----------------------------------------------------------------------------------------


def _refused(conn: psycopg.Connection, sql: str, params: Sequence[object] | None = None) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
        conn.execute(sql, params)


def test_b_cannot_write_rows_owned_by_a_or_public_rows(db, world):
    doc = "insert into documents (owner_id, external_id, content_hash, visibility) values (%s, %s, 'h', %s)"
    with acting_as(db, B):
        _refused(db, doc, (A.user_id, "x", "private"))
    with acting_as(db, B):
        _refused(db, doc, (B.user_id, "y", "public"))  # public documents: the service path only
    with acting_as(db, B):
        _refused(db, doc, (None, "z", "public"))
    with (  # A's document is, for B, a document that does not exist (migration 018)
        acting_as(db, B),
        pytest.raises(psycopg.errors.ForeignKeyViolation, match=f"document {world.a_doc} does not exist"),
    ):
        db.execute(_chunk_sql(), (world.a_doc, B.user_id, "private"))
    with acting_as(db, B):
        _refused(db, _chunk_sql(), (world.public_doc, B.user_id, "private"))
    with acting_as(db, B):
        _refused(db, "insert into conversations (owner_id) values (%s)", (A.user_id,))
    with (
        acting_as(db, B),
        pytest.raises(
            psycopg.errors.ForeignKeyViolation, match=f"conversation {world.a_conversation} does not"
        ),
    ):
        db.execute(
            "insert into messages (conversation_id, role, content) values (%s, 'user', 'hi')",
            (world.a_conversation,),
        )


def test_b_cannot_change_or_delete_as_rows_or_public_ones(db, world):
    with acting_as(db, B):
        # RLS hides the targets: nothing happens, nothing is revealed.
        assert db.execute("update documents set title = 'mine' where id = %s", (world.a_doc,)).rowcount == 0
        assert db.execute("update documents set title = 'x' where id = %s", (world.public_doc,)).rowcount == 0
        assert db.execute("delete from chunks where document_id = %s", (world.a_doc,)).rowcount == 0
        assert db.execute("delete from documents where id = %s", (world.public_doc,)).rowcount == 0
        assert db.execute("delete from messages").rowcount == 0
        assert db.execute("update conversations set title = 'x'").rowcount == 0
    with acting_as(db, B):
        _refused(db, "update documents set visibility = 'public' where id = %s", (world.b_doc,))
    # Giving a document away: refused before the policies by documents_keep_owner (migration 024).
    with acting_as(db, B), pytest.raises(psycopg.errors.InsufficientPrivilege, match="keeps its owner"):
        db.execute("update documents set owner_id = %s where id = %s", (A.user_id, world.b_doc))
    with acting_as(db, B), pytest.raises(psycopg.errors.ForeignKeyViolation, match="does not exist"):
        db.execute("update chunks set document_id = %s where id = %s", (world.a_doc, world.b_chunk))
    with acting_as(db, B), pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("truncate documents cascade")
    assert ids(db, "select id from documents") == {world.a_doc, world.b_doc, world.public_doc}
    assert db.execute("select title from documents where id = %s", (world.a_doc,)).fetchone() == ("A 的笔记",)


def _chunk_sql() -> str:
    return (
        "insert into chunks (document_id, owner_id, visibility, position, content, content_hash, "
        "content_tokens, embedding, embedding_model) "
        "values (%s, %s, %s, 9, '考拉', 'h', '考拉', array_fill(0, array[384])::vector, 'test-model@384')"
    )


def test_a_user_writes_private_documents_of_their_own_and_term_statistics_follow(db, world):
    with db.transaction():
        apply_identity(db, B)
        doc = db.execute(
            "insert into documents (external_id, content_hash) values ('mine', 'h') "
            "returning id, owner_id, visibility"
        ).fetchone()
        assert doc[1:] == (B.user_id, "private")  # owner defaults to auth.uid(), visibility to private
        chunk = db.execute(
            _chunk_sql() + " returning owner_id, visibility", (doc[0], None, "public")
        ).fetchone()
        assert chunk == (B.user_id, "private")  # copied from the document, whatever the writer said
        conversation = db.execute(
            "insert into conversations (title) values ('t') returning owner_id"
        ).fetchone()
        assert conversation == (B.user_id,)
    assert db.execute("select ndoc from term_stats where lexeme = '考拉'").fetchone() == (2,)  # B's scope
    with acting_as(db, B):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("insert into term_stats values ('forged', gen_random_uuid(), 1)")
    with db.transaction():
        apply_identity(db, B)
        assert db.execute("delete from documents where id = %s", (doc[0],)).rowcount == 1
    assert db.execute("select ndoc from term_stats where lexeme = '考拉'").fetchone() == (1,)


def test_a_document_that_does_not_say_is_private_with_an_owner_and_public_without(db):
    rows = db.execute(
        "insert into documents (external_id, content_hash, owner_id) "
        "values ('mine', 'h', %s), ('cli', 'h', null) returning external_id, visibility",
        (A.user_id,),
    ).fetchall()
    assert sorted(rows) == [("cli", "public"), ("mine", "private")]
    # Nobody could ever read a private document without an owner: refused, not stored.
    with pytest.raises(psycopg.errors.CheckViolation, match="documents_private_has_owner"):
        db.execute(
            "insert into documents (external_id, content_hash, visibility) values ('x', 'h', 'private')"
        )


def test_the_service_role_publishes_and_visibility_reaches_the_chunks(db, world):
    with db.transaction():
        apply_identity(db, SERVICE_IDENTITY)
        db.execute(
            "update documents set visibility = 'public', owner_id = null where id = %s", (world.b_doc,)
        )
        db.execute(
            "insert into documents (external_id, content_hash, visibility) values ('corpus', 'h', 'public')"
        )
    assert db.execute(
        "select owner_id, visibility from chunks where id = %s", (world.b_chunk,)
    ).fetchone() == (
        None,
        "public",
    )
    with acting_as(db, A):
        assert world.b_chunk in hybrid_ids(db, "考拉", axis(1))
        assert len(ids(db, "select id from documents where visibility = 'public'")) == 3


def test_conversation_owner_changes_reach_its_messages(db, world):
    db.execute("update conversations set owner_id = %s where id = %s", (B.user_id, world.a_conversation))
    with acting_as(db, B):
        assert ids(db, "select id from messages") == {world.a_message}
    with acting_as(db, A):
        assert ids(db, "select id from messages") == set()


def test_the_embedding_cache_is_backend_only(db):
    db.execute(
        "insert into embedding_cache (scope, model, content_hash, embedding) values (%s, 'm', 'h', '[1,0]')",
        (B.user_id,),
    )
    with acting_as(db, B), pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select count(*) from embedding_cache")
    with acting_as(db, SERVICE_IDENTITY):
        assert db.execute("select count(*) from embedding_cache").fetchone() == (1,)


# --- the identity switch itself ------------------------------------------------------------------------


def test_the_identity_ends_with_its_transaction(db, world):
    with db.transaction():
        apply_identity(db, B)
        assert db.execute("select current_user, auth.uid(), auth.role()").fetchone() == (
            "authenticated",
            B.user_id,
            "authenticated",
        )
    assert db.execute("select current_user = session_user, auth.uid()").fetchone() == (True, None)
    with pytest.raises(RuntimeError, match="needs an open transaction"):
        apply_identity(db, B)  # autocommit, no transaction: the switch would last one statement


def test_only_whitelisted_roles_can_be_applied(db):
    bad = Identity(user_id=A.user_id, role="authenticated")
    object.__setattr__(bad, "role", "postgres")
    with db.transaction(force_rollback=True), pytest.raises(ValueError, match="not a request role"):
        apply_identity(db, bad)


def test_user_transaction_commits_as_the_user(database_url, db, world):
    pool = ConnectionPool(database_url, min_size=1, max_size=2, configure=configure_connection, open=True)
    try:
        with user_transaction(pool, A) as conn:
            assert ids(conn, "select id from conversations") == {world.a_conversation}
            conn.execute("insert into conversations (title) values ('new')")
        with user_transaction(pool, B) as conn:
            assert ids(conn, "select title from conversations") == set()
        with pytest.raises(psycopg.errors.InsufficientPrivilege), user_transaction(pool, B) as conn:
            conn.execute("insert into conversations (owner_id) values (%s)", (A.user_id,))
        with pool.connection() as conn:  # the next borrower is the backend again
            assert conn.execute("select current_user = session_user").fetchone() == (True,)
    finally:
        pool.close()
    assert db.execute("select owner_id from conversations where title = 'new'").fetchone() == (A.user_id,)
