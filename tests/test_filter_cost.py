"""What a filter may cost (issue 24, finding 6): the API refuses one over FILTER_MAX_SIZE before any
work, a search compiles its filter once, and compiling is linear in the filter's size.

The filter of the finding, {"$or": 64 x {"tags": {"$in": 100 values}}} (236 kB), was legal and took
~21 s of database CPU on a 40-chunk corpus: compiled three times per search, each time quadratic in
the number of values.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.auth import user_identity
from backend.config import DEFAULT_METADATA_WHITELIST
from backend.db.identity import apply_identity
from backend.errors import InvalidInput
from backend.retrieval.filters import compile_filter
from tests.factories import axis, insert_chunk, insert_document

USER = user_identity(uuid.UUID("cccccccc-0000-4000-8000-000000000003"))


def tags_in(groups: int, values: int) -> dict:
    """{"$or": groups x {"tags": {"$in": values tags}}}: the shape of the finding."""
    return {"$or": [{"tags": {"$in": [f"t{g}-{i}" for i in range(values)]}} for g in range(groups)]}


def test_the_filter_of_the_finding_is_refused_naming_the_limit_and_its_size():
    with pytest.raises(InvalidInput) as refused:
        compile_filter(tags_in(64, 100), DEFAULT_METADATA_WHITELIST, max_size=200)
    # 64 conditions and 6,400 values
    assert str(refused.value) == (
        "filters hold 6464 conditions and values (each element of a list counts); "
        "the limit is 200 (FILTER_MAX_SIZE)"
    )
    assert compile_filter(tags_in(1, 100), DEFAULT_METADATA_WHITELIST, max_size=200)


def test_search_and_research_answer_a_filter_over_the_budget_with_a_422(client):
    too_big = tags_in(8, 100)  # 808 conditions and values; each shape bound alone allows it
    response = client.post("/search", json={"query": "袋鼠", "filters": too_big})
    assert response.status_code == 422, response.text
    assert "808" in response.json()["detail"]
    assert "the limit is 200 (FILTER_MAX_SIZE)" in response.json()["detail"]
    response = client.post("/research", json={"question": "袋鼠分布在哪里", "filters": too_big})
    assert response.status_code == 422, response.text
    assert "FILTER_MAX_SIZE" in response.json()["detail"]
    within = client.post("/search", json={"query": "袋鼠", "filters": tags_in(1, 100)})
    assert within.status_code == 200, within.text


CALLS = "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions where funcname = 'search_filter'"


def _search_filter_calls(db: psycopg.Connection, statement: str, params: tuple) -> int:
    """How many times `statement`, run as USER, called search_filter()."""
    with db.transaction(force_rollback=True):
        db.execute("set local track_functions = 'all'")
        # The view also holds calls of earlier transactions not yet flushed to the cumulative stats.
        before = db.execute(CALLS).fetchone()
        apply_identity(db, USER)
        db.execute(statement, params).fetchall()
        db.execute("select set_config('role', 'none', true)")
        after = db.execute(CALLS).fetchone()
    assert before is not None
    assert after is not None
    return int(after[0]) - int(before[0])


def test_a_search_compiles_its_filter_once(db):
    """Under RLS with a scope over the exact threshold, hybrid_search used to compile the filter in
    itself, in search_scope_scan and in hybrid_search_visible_matches."""
    doc = insert_document(db, owner_id=USER.user_id)
    for i in range(3):
        insert_chunk(db, doc, f"袋鼠 第{i}段", axis(i), position=i, metadata={"text_len": 10 + i})
    wide = Jsonb({"$or": [{"text_len": {"$gte": 10}}, {"lang": "zh"}]})  # residual: checked row by row
    hybrid = "select * from hybrid_search('袋鼠', %s, 5, filter => %s, exact_scan_threshold => 1)"
    assert _search_filter_calls(db, hybrid, (axis(0), wide)) == 1
    exact = "select * from hybrid_search('袋鼠', %s, 5, filter => %s)"
    assert _search_filter_calls(db, exact, (axis(0), wide)) == 1
    nearest = "select * from match_documents(%s, 5, -1, %s)"
    assert _search_filter_calls(db, nearest, (axis(0), wide)) == 1


def test_compiling_a_filter_is_linear_in_its_values(db):
    """20,000 values: ~0.5 s of CPU (it was ~90 s: quadratic). A guard, not a benchmark: the bound is
    far above the linear cost and far below the quadratic one."""
    huge = {
        "$or": [{"$or": [{"tags": {"$contains": [f"t{g}-{i}"]}} for i in range(100)]} for g in range(200)]
    }
    count = "select (select count(*) from jsonb_object_keys(vars)) from search_filter(%s)"
    with db.transaction():
        db.execute("set local statement_timeout = '20s'")
        row = db.execute(count, (Jsonb(huge),)).fetchone()
    assert row == (20_000,)
