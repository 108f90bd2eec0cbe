"""Team collections below the API, as `authenticated` in SQL (what a supabase-js client gets through
PostgREST): the policies, the search functions, the term statistics and the references decide by
membership, and a membership change counts from the next statement (issue 27, migration 024)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import psycopg
import pytest

from backend.auth import SERVICE_IDENTITY, user_identity
from backend.db.identity import apply_identity
from tests.factories import acting_as, axis, insert_chunk, insert_document
from tests.test_privacy_sql import scoped_stats

A, B, C, D = (user_identity(uuid.UUID(int=n)) for n in (0xA, 0xB, 0xC, 0xD))
MARK = "zqxteammark"  # in the collection's document only
UNKNOWN = "zqxnowhere"


@dataclass
class Team:
    collection: uuid.UUID
    doc: uuid.UUID  # A's document in the collection


def add_member(conn: psycopg.Connection, collection: uuid.UUID, user: uuid.UUID | None, role: str) -> None:
    conn.execute(
        "insert into collection_members (collection_id, user_id, role) values (%s, %s, %s)",
        (collection, user, role),
    )


@pytest.fixture
def team(db) -> Team:
    row = db.execute(
        "insert into collections (owner_id, name) values (%s, '航天组') returning id", (A.user_id,)
    ).fetchone()
    assert row is not None
    collection = row[0]
    add_member(db, collection, B.user_id, "viewer")
    add_member(db, collection, C.user_id, "editor")
    doc = insert_document(db, title="火星基地", owner_id=A.user_id)
    db.execute("update documents set collection_id = %s where id = %s", (collection, doc))
    insert_chunk(db, doc, f"火星 {MARK} 氧气", axis(0), tokens=f"火星 {MARK} 氧气")
    public = insert_document(db, title="公开", visibility="public")
    insert_chunk(db, public, "火星 公开 资料", axis(1), tokens="火星 公开 资料")
    return Team(collection, doc)


def visible_chunks(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("select content from chunks").fetchall()}


def found(conn: psycopg.Connection, **narrow) -> set[str]:
    rows = conn.execute(
        "select content from hybrid_search(%(text)s, %(q)s, match_count => 10, collections => %(c)s)",
        {"text": f"火星 {MARK}", "q": axis(0), "c": narrow.get("collections")},
    ).fetchall()
    return {r[0] for r in rows}


def df(conn: psycopg.Connection, lexeme: str) -> int:
    row = conn.execute("select terms from hybrid_search_terms(%s)", (lexeme,)).fetchone()
    assert row is not None
    return {t["lexeme"]: t["df"] for t in row[0]}[lexeme]


def test_members_read_and_find_the_collection_and_others_do_not(db, team):
    marked = f"火星 {MARK} 氧气"
    for member in (A, B, C):
        with acting_as(db, member):
            assert marked in visible_chunks(db)
            assert db.execute("select count(*) from documents where id = %s", (team.doc,)).fetchone() == (1,)
            assert marked in found(db)
            assert found(db, collections=[team.collection]) == {marked}
            assert db.execute("select count(*) from collections").fetchone() == (1,)
            assert db.execute("select count(*) from collection_members").fetchone() == (3,)
    with acting_as(db, D):
        assert visible_chunks(db) == {"火星 公开 资料"}
        assert marked not in found(db)
        assert found(db, collections=[team.collection]) == set()  # naming it opens nothing
        assert db.execute("select count(*) from collections").fetchone() == (0,)
        assert db.execute("select count(*) from collection_members").fetchone() == (0,)
        assert db.execute(
            "select cardinality(search_scope('{}', 100, %s))", ([team.collection],)
        ).fetchone() == (0,)
    with acting_as(db, B):
        assert db.execute(
            "select cardinality(search_scope('{}', 100, %s))", ([team.collection],)
        ).fetchone() == (1,)


def test_idf_counts_the_collection_for_its_members_only(db, team):
    with acting_as(db, B):
        assert df(db, MARK) == 1
    with acting_as(db, D):
        assert df(db, MARK) == df(db, UNKNOWN) == 0


def test_a_membership_change_counts_from_the_next_statement(db, team):
    with db.transaction(force_rollback=True):
        apply_identity(db, B)
        assert df(db, MARK) == 1
        assert len(visible_chunks(db)) == 2
        apply_identity(db, A)
        db.execute("delete from collection_members where user_id = %s", (B.user_id,))
        apply_identity(db, B)
        assert visible_chunks(db) == {"火星 公开 资料"}
        assert df(db, MARK) == 0
        assert f"火星 {MARK} 氧气" not in found(db)


def test_roles_decide_writes_in_sql(db, team):
    def add(identity) -> None:
        with acting_as(db, identity):
            db.execute(
                "insert into documents (external_id, title, content_hash, collection_id) "
                "values ('x', 'x', 'h', %s)",
                (team.collection,),
            )

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        add(B)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        add(D)
    add(C)  # (rolled back)
    for identity, changed in ((B, 0), (D, 0), (C, 1)):
        with acting_as(db, identity):
            assert (
                db.execute("update documents set title = '改' where id = %s", (team.doc,)).rowcount == changed
            )
            assert db.execute("delete from chunks where document_id = %s", (team.doc,)).rowcount == changed
            assert db.execute("delete from documents where id = %s", (team.doc,)).rowcount == changed
    with acting_as(db, B), pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(
            "insert into collection_members (collection_id, user_id, role) values (%s, %s, 'viewer')",
            (team.collection, D.user_id),
        )
    with acting_as(db, A):
        add_member(db, team.collection, D.user_id, "viewer")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="stays its admin"):
            db.execute("delete from collection_members where user_id = %s", (A.user_id,))


def test_a_collections_id_is_never_the_clients(db, team):
    """The id is a statistics and cache scope key: set to B's id, it would open B's scope to A's team."""
    with acting_as(db, A):
        row = db.execute(
            "insert into collections (id, owner_id, name) values (%s, %s, 'x') returning id",
            (B.user_id, A.user_id),
        ).fetchone()
        assert row is not None
        assert row[0] != B.user_id
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("update collections set id = %s where id = %s", (B.user_id, row[0]))


def test_statistics_follow_moves_and_deletion_of_a_collection_and_equal_a_rebuild(db, team):
    def check() -> set[tuple]:
        terms, corpus = scoped_stats(db)
        with db.transaction(force_rollback=True):
            db.execute("select refresh_term_stats()")
            assert scoped_stats(db) == (terms, corpus)
        return terms

    assert (MARK, team.collection, 1) in check()
    db.execute("update documents set collection_id = null where id = %s", (team.doc,))
    assert (MARK, A.user_id, 1) in check()
    db.execute("update documents set collection_id = %s where id = %s", (team.collection, team.doc))
    assert (MARK, team.collection, 1) in check()
    db.execute("delete from collections where id = %s", (team.collection,))  # documents stay, private
    terms = check()
    assert (MARK, A.user_id, 1) in terms
    assert not any(t[1] == team.collection for t in terms)
    assert db.execute("select collection_id from chunks where document_id = %s", (team.doc,)).fetchone() == (
        None,
    )


def test_the_service_path_reads_every_collection(db, team):
    with acting_as(db, SERVICE_IDENTITY):
        assert f"火星 {MARK} 氧气" in visible_chunks(db)
        assert df(db, MARK) == 1


def test_an_editor_can_neither_take_a_document_over_nor_hand_it_to_someone_outside(db, team):
    for identity, new_owner in ((C, C.user_id), (C, D.user_id), (A, D.user_id)):
        with (
            acting_as(db, identity),
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="keeps its owner"),
        ):
            db.execute("update documents set owner_id = %s where id = %s", (new_owner, team.doc))
    with acting_as(db, SERVICE_IDENTITY):
        assert (
            db.execute("update documents set owner_id = %s where id = %s", (D.user_id, team.doc)).rowcount
            == 1
        )
