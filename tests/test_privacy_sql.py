"""Privacy between users below the API, as `authenticated` and `anon` in SQL (what PostgREST exposes).

Row-level security keeps A's rows from B; these tests look at everything around it: every relation
B or anon can select (found from the catalog, on a database migrated under Supabase's default
privileges), the term statistics and the idf the search functions hand out, and the references a
user can write (whose errors must not tell whether another user's row exists).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from backend.auth import SERVICE_IDENTITY, user_identity
from backend.db import migrations
from backend.db.connection import connect
from tests.factories import (
    acting_as,
    axis,
    insert_chunk,
    insert_conversation,
    insert_document,
    insert_message,
)

A = user_identity(uuid.UUID("aaaaaaaa-0000-4000-8000-00000000000a"))
B = user_identity(uuid.UUID("bbbbbbbb-0000-4000-8000-00000000000b"))
MARK = "zqxprivmark"  # in A's private document, conversation and research run only
UNKNOWN = "zqxnowhere"  # in no document at all


@dataclass
class World:
    a_doc: uuid.UUID
    a_conversation: uuid.UUID
    a_message: uuid.UUID
    a_run: uuid.UUID
    b_doc: uuid.UUID
    b_conversation: uuid.UUID
    public_doc: uuid.UUID


def build_world(conn: psycopg.Connection) -> World:
    """A's private document, chat and research run carry MARK everywhere; B and the corpus do not."""
    a_doc = insert_document(
        conn, external_id=f"{MARK}.txt", title=f"{MARK} 计划", owner_id=A.user_id, metadata={"tag": MARK}
    )
    insert_chunk(conn, a_doc, f"裁员 {MARK} 计划 薪资", axis(0), tokens=f"裁员 {MARK} 计划 薪资")
    b_doc = insert_document(conn, title="B 的笔记", owner_id=B.user_id)
    insert_chunk(conn, b_doc, "考拉 笔记", axis(1), tokens="考拉 笔记")
    public_doc = insert_document(conn, title="公开", visibility="public")
    insert_chunk(conn, public_doc, "澳洲 袋鼠 计划", axis(2), tokens="澳洲 袋鼠 计划")
    a_conversation = insert_conversation(conn, owner_id=A.user_id, title=f"{MARK} 对话")
    a_message = insert_message(conn, a_conversation, f"{MARK} 是什么？")
    conn.execute(
        "update messages set sources = %s where id = %s",
        (Jsonb([{"n": 1, "document_id": str(a_doc), "snippet": f"裁员 {MARK}", "title": MARK}]), a_message),
    )
    run = conn.execute(
        "insert into research_runs (owner_id, conversation_id, message_id, question, preset, result) "
        "values (%s, %s, %s, %s, 'lite', %s) returning id",
        (A.user_id, a_conversation, a_message, f"{MARK} 的计划？", Jsonb({"report": f"# {MARK}"})),
    ).fetchone()
    assert run is not None
    a_run = run[0]
    b_conversation = insert_conversation(conn, owner_id=B.user_id, title="B 的对话")
    return World(a_doc, a_conversation, a_message, a_run, b_doc, b_conversation, public_doc)


# --- (a) every readable relation, scanned for A's marker -------------------------------------------------

_READABLE_COLUMNS = """
    select n.nspname, c.relname, array_agg(a.attname::text order by a.attnum)
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where c.relkind in ('r', 'v', 'm', 'p', 'f')
      and n.nspname not like 'pg\\_toast%%' and n.nspname not like 'pg\\_temp%%'
      and has_schema_privilege(n.oid, 'usage')
      and has_column_privilege(c.oid, a.attnum, 'select')
    group by n.nspname, c.relname
    order by 1, 2
"""


def marker_hits(conn: psycopg.Connection, marker: str) -> dict[str, int]:
    """Every relation (any schema, catalog included) the current role can select, every column it may
    read cast to text: relation -> rows holding `marker`. The marker travels as a parameter, so the
    scan's own statement text (pg_stat_activity) never holds it."""
    hits: dict[str, int] = {}
    relations = conn.execute(_READABLE_COLUMNS).fetchall()
    assert relations, "the role can read nothing at all: the scan would prove nothing"
    for schema, name, columns in relations:
        text = sql.SQL("concat_ws(' ', {})").format(
            sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns)
        )
        query = sql.SQL("select count(*) from {} t where {} ilike %s").format(
            sql.Identifier(schema, name), text
        )
        try:
            with conn.transaction():  # a savepoint: one relation failing must not end the scan
                row = conn.execute(query, (f"%{marker}%",)).fetchone()
        except psycopg.Error:
            # Only a few system views fail to read here (pg_shmem_allocations_numa without NUMA);
            # a table of ours that fails is a finding.
            assert schema == "pg_catalog", f"{schema}.{name} could not be scanned"
            continue
        if row and row[0]:
            hits[f"{schema}.{name}"] = row[0]
    return hits


@pytest.fixture(scope="module")
def supabase_like_url(fresh_database, database_url) -> str:
    """A database migrated under Supabase's default privileges: every new table, sequence and function
    in public granted to anon, authenticated and service_role unless a migration revokes it.
    (database_url first: its migration creates the roles.)"""
    url = fresh_database()
    with psycopg.connect(url, autocommit=True) as conn:
        for kind in ("tables", "sequences", "functions"):
            conn.execute(
                f"alter default privileges in schema public grant all on {kind} "
                "to anon, authenticated, service_role"
            )
        conn.execute("grant usage on schema public to anon, authenticated, service_role")
    migrations.upgrade(url)
    return url


@pytest.fixture
def supabase_db(supabase_like_url) -> Iterator[psycopg.Connection]:
    conn = connect(supabase_like_url, autocommit=True)
    try:
        yield conn
    finally:
        conn.execute(
            "truncate documents, chunks, conversations, messages, research_runs, term_stats, corpus_stats "
            "restart identity cascade"
        )
        conn.close()


def test_no_relation_b_or_anon_can_read_holds_a_private_marker(supabase_db):
    build_world(supabase_db)
    owner = marker_hits(supabase_db, MARK)  # the scan finds the marker where it is
    assert {"public.documents", "public.chunks", "public.messages", "public.research_runs"} <= set(owner)
    with acting_as(supabase_db, B):
        assert marker_hits(supabase_db, MARK) == {}
        assert marker_hits(supabase_db, "考拉")  # B's own rows are found: the scan reads as B
    with supabase_db.transaction(force_rollback=True):
        supabase_db.execute(
            "select set_config('role', 'anon', true), set_config('request.jwt.claims', %s, true)",
            ('{"role": "anon"}',),
        )
        assert marker_hits(supabase_db, MARK) == {}


# --- (b) term statistics ------------------------------------------------------------------------------


@pytest.fixture
def world(db) -> World:
    return build_world(db)


def term_idfs(conn: psycopg.Connection, text: str) -> dict[str, tuple[int, float]]:
    row = conn.execute("select terms from hybrid_search_terms(%s)", (text,)).fetchone()
    assert row is not None
    return {t["lexeme"]: (t["df"], t["idf"]) for t in row[0]}


@pytest.mark.parametrize("role", ["authenticated", "anon"])
def test_term_statistics_are_not_readable_by_users_or_anon(supabase_db, role):
    """On a database migrated under Supabase's default grants (the session database's anon has been
    granted every table by another test)."""
    build_world(supabase_db)
    for table in ("term_stats", "corpus_stats"):
        privilege = supabase_db.execute(
            "select has_table_privilege(%s, %s, 'select')", (role, table)
        ).fetchone()
        assert privilege == (False,)
        with supabase_db.transaction(force_rollback=True):
            supabase_db.execute(
                "select set_config('role', %s, true), set_config('request.jwt.claims', %s, true)",
                (role, f'{{"role": "{role}", "sub": "{B.user_id}"}}'),
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                supabase_db.execute(sql.SQL("select * from {}").format(sql.Identifier(table)))


def test_b_learns_the_same_idf_for_as_private_word_as_for_an_unknown_word(db, world):
    with acting_as(db, B):
        seen = term_idfs(db, f"{MARK} {UNKNOWN} 计划 考拉")
    assert seen[MARK] == seen[UNKNOWN] == (0, seen[UNKNOWN][1])
    assert seen["计划"][0] == 1  # the public chunk only, not A's
    assert seen["考拉"][0] == 1  # B's own chunk counts for B
    with acting_as(db, A):
        mine = term_idfs(db, f"{MARK} {UNKNOWN} 计划 考拉")
    assert mine[MARK][0] == 1
    assert mine[MARK][1] < mine[UNKNOWN][1]
    assert (mine["计划"][0], mine["考拉"][0]) == (2, 0)
    for everything in (SERVICE_IDENTITY, None):  # the service path and the backend's own role: totals
        if everything is None:
            totals = term_idfs(db, f"{MARK} 计划 考拉")
        else:
            with acting_as(db, everything):
                totals = term_idfs(db, f"{MARK} 计划 考拉")
        assert {t: df for t, (df, _) in totals.items()} == {MARK: 1, "计划": 2, "考拉": 1}


# --- (c) references to other users' rows ----------------------------------------------------------------


def _reference_error(conn: psycopg.Connection, statement: str, params: tuple) -> tuple[str | None, str]:
    """(SQLSTATE, message with the ids taken out) of a statement that must fail, as B."""
    with acting_as(conn, B), pytest.raises(psycopg.Error) as caught:
        conn.execute(statement, params)
    message = str(caught.value.diag.message_primary)
    for value in params:
        message = message.replace(str(value), "<id>")
    return caught.value.sqlstate, message


REFERENCES = {
    "research_runs.conversation_id": (
        "insert into research_runs (owner_id, conversation_id, question, preset) "
        "values (%s, %s, 'q', 'lite')",
        lambda w: w.a_conversation,
    ),
    "research_runs.message_id": (
        "insert into research_runs (owner_id, message_id, question, preset) values (%s, %s, 'q', 'lite')",
        lambda w: w.a_message,
    ),
    "messages.conversation_id": (
        "insert into messages (owner_id, conversation_id, role, content) values (%s, %s, 'user', 'hi')",
        lambda w: w.a_conversation,
    ),
    "chunks.document_id": (
        "insert into chunks (owner_id, document_id, position, content, content_hash, content_tokens, "
        "embedding, embedding_model) "
        "values (%s, %s, 7, 'x', 'h', 'x', array_fill(0, array[384])::vector, 'm@384')",
        lambda w: w.a_doc,
    ),
}


@pytest.mark.parametrize("column", list(REFERENCES))
def test_b_cannot_reference_as_rows_and_cannot_tell_them_from_missing_ones(db, world, column):
    statement, target = REFERENCES[column]
    as_row = _reference_error(db, statement, (B.user_id, target(world)))
    missing = _reference_error(db, statement, (B.user_id, uuid.uuid4()))
    assert as_row == missing
    assert as_row[0] == "23503"  # foreign_key_violation, whatever the reason
    assert "does not exist" in as_row[1]


@pytest.mark.parametrize(
    ("statement", "own", "other"),
    [
        ("update research_runs set conversation_id = %s where id = %s", "b_conversation", "a_conversation"),
        ("update messages set conversation_id = %s where id = %s", "b_conversation", "a_conversation"),
    ],
)
def test_b_cannot_repoint_an_own_row_at_as_rows(db, world, statement, own, other):
    run = db.execute(
        "insert into research_runs (owner_id, conversation_id, question, preset) "
        "values (%s, %s, 'q', 'lite') returning id",
        (B.user_id, world.b_conversation),
    ).fetchone()[0]
    message = insert_message(db, world.b_conversation, "B 的问题")
    row = run if statement.startswith("update research_runs") else message
    as_row = _reference_error(db, statement, (getattr(world, other), row))
    missing = _reference_error(db, statement, (uuid.uuid4(), row))
    assert as_row == missing
    assert as_row[0] == "23503"
    with acting_as(db, B):  # B's own rows are fine
        assert db.execute(statement, (getattr(world, own), row)).rowcount == 1


def test_own_references_and_the_service_path_still_work(db, world):
    with acting_as(db, A):
        db.execute(
            "insert into research_runs (conversation_id, message_id, question, preset) "
            "values (%s, %s, 'q', 'lite')",
            (world.a_conversation, world.a_message),
        )
        db.execute(
            "insert into messages (conversation_id, role, content) values (%s, 'user', 'again')",
            (world.a_conversation,),
        )
    with acting_as(db, SERVICE_IDENTITY):
        db.execute(
            "insert into research_runs (owner_id, conversation_id, question, preset) "
            "values (%s, %s, 'q', 'lite')",
            (A.user_id, world.a_conversation),
        )
    # A run of A's may not point at B's conversation, whoever writes it.
    with acting_as(db, SERVICE_IDENTITY), pytest.raises(psycopg.errors.ForeignKeyViolation):
        db.execute(
            "insert into research_runs (owner_id, conversation_id, question, preset) "
            "values (%s, %s, 'q', 'lite')",
            (A.user_id, world.b_conversation),
        )


# --- the per-scope statistics stay exact through every kind of write -------------------------------------


def scoped_stats(conn: psycopg.Connection) -> tuple[set[tuple], set[tuple]]:
    terms = {tuple(r) for r in conn.execute("select lexeme, scope, ndoc from term_stats").fetchall()}
    corpus = {
        tuple(r) for r in conn.execute("select scope, nchunks, total_lexemes from corpus_stats").fetchall()
    }
    return terms, corpus


def test_per_scope_statistics_follow_publishing_edits_and_deletes_and_equal_a_rebuild(db, world):
    public = uuid.UUID(int=0)

    def check() -> tuple[set[tuple], set[tuple]]:
        kept = scoped_stats(db)
        with db.transaction(force_rollback=True):
            db.execute("select refresh_term_stats()")
            assert scoped_stats(db) == kept  # the triggers agree with a recount, scope by scope
        return kept

    terms, corpus = check()
    assert (MARK, A.user_id, 1) in terms
    assert not any(t[0] == MARK and t[1] != A.user_id for t in terms)
    assert ("计划", A.user_id, 1) in terms
    assert ("计划", public, 1) in terms
    # Published: A's words move to the public scope; made private again: back.
    db.execute("update documents set visibility = 'public', owner_id = null where id = %s", (world.a_doc,))
    terms, corpus = check()
    assert (MARK, public, 1) in terms
    assert ("计划", public, 2) in terms
    assert not any(t[1] == A.user_id for t in terms)
    assert not any(c[0] == A.user_id for c in corpus)
    db.execute(
        "update documents set visibility = 'private', owner_id = %s where id = %s", (A.user_id, world.a_doc)
    )
    terms, corpus = check()
    assert (MARK, A.user_id, 1) in terms
    assert ("计划", public, 1) in terms
    # New text for a chunk (which the triggers did not follow before 018), a new embedding (nothing).
    db.execute("update chunks set content_tokens = '裁员 名单' where document_id = %s", (world.a_doc,))
    db.execute("update chunks set embedding_model = 'other@384' where document_id = %s", (world.a_doc,))
    terms, corpus = check()
    assert not any(t[0] == MARK for t in terms)
    assert ("名单", A.user_id, 1) in terms
    # Deleted: nothing of A is left, not even a zero count.
    db.execute("delete from documents where id = %s", (world.a_doc,))
    terms, corpus = check()
    assert not any(t[1] == A.user_id for t in terms)
    assert not any(c[0] == A.user_id for c in corpus)


def test_the_statistics_functions_are_not_callable_by_api_roles(db):
    for function in (
        "term_stats_add(text[], uuid[], bigint[], uuid[], bigint[], bigint[])",
        "refresh_term_stats()",
        "readable_document_ids(text[], uuid)",
    ):
        for role in ("anon", "authenticated", "service_role"):
            assert not db.execute(
                "select has_function_privilege(%s, %s, 'execute')", (role, function)
            ).fetchone()[0]
    assert not db.execute(
        "select has_function_privilege('anon', 'hybrid_search_terms(text, float8, int, int)', 'execute')"
    ).fetchone()[0]
