"""Erasure on the cluster. tests/test_erasure.py's tests of a user's own document run unchanged (its
copies live in its owner's answers, on its tenant's shard). A document other users cite -- the shared
corpus -- lives in another tenant: deleting it must still erase it from every user's stored answers
(sql/citus/erase_copies_elsewhere.sql, run on the coordinator after the delete). Left out here:
tests/test_erasure.py's check that a row citing another user's document is stored erased -- on the
cluster such a source is stored as cited (docs/scaling.md, "Erasure on the cluster")."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.db.repositories import erasure
from tests.test_erasure import (  # noqa: F401  (collected here: each test runs on a Citus coordinator)
    client,
    test_deleting_a_document_leaves_no_copy_of_its_text_and_old_answers_say_it_was_deleted,
    test_re_ingesting_keeps_the_old_passage_and_marks_it_changed,
    user_tables_holding,
)
from tests.test_isolation_api import post

MARK = "zqxsharedmark"
SHARED = {
    "external_id": "travel-budget",
    "title": f"差旅制度 {MARK}",
    "content": f"公司今年的差旅预算是八十万元，内部代号 {MARK}，超出部分需要总监批准。",
}
QUESTION = "公司今年的差旅预算是多少？"


def test_deleting_a_shared_corpus_document_erases_it_from_every_users_stored_answers(users, db):
    doc = post(users.service, "/documents", SHARED)["documents"][0]["document_id"]
    chat = post(users.a, "/chat", {"message": QUESTION})
    assert chat["sources"][0]["document_id"] == doc
    run = post(users.b, "/research", {"question": QUESTION})
    assert doc in [s["document_id"] for s in run["sources"]]
    assert {"public.messages", "public.research_runs", "public.chunks"} <= set(user_tables_holding(db, MARK))

    assert users.service.delete(f"/documents/{doc}").status_code == 204

    assert user_tables_holding(db, MARK) == {}
    # A's answer still renders, its source listed as deleted; B's research run too.
    messages = users.a.get(f"/conversations/{chat['conversation_id']}/messages").json()
    source = messages[1]["sources"][0]
    assert (source["document_id"], source["deleted"], source["snippet"], source["title"]) == (
        doc,
        True,
        "",
        "",
    )
    stored = users.b.get(f"/research/{run['run_id']}").json()["result"]
    gone = [s for s in stored["sources"] if s["document_id"] == doc]
    assert gone
    assert all(s["deleted"] and s["snippet"] == "" for s in gone)


def test_an_erasure_a_crash_interrupted_is_finished_when_the_api_starts_again(users, db, monkeypatch):
    """The delete of a shared document commits, then the process dies before the second transaction
    that erases the copies other users hold (on their shards): the delete queued them in its own
    transaction (sql/citus/erasure_outbox.sql), and the next start of the API finishes the erasure."""
    doc = post(users.service, "/documents", SHARED)["documents"][0]["document_id"]
    chat = post(users.a, "/chat", {"message": QUESTION})
    assert chat["sources"][0]["document_id"] == doc
    monkeypatch.setattr(erasure, "erase_copies_elsewhere", lambda conn, *, ids: None)  # the crash

    assert users.service.delete(f"/documents/{doc}").status_code == 204

    assert "public.messages" in user_tables_holding(db, MARK)  # A's answer still holds the passage
    monkeypatch.undo()
    with TestClient(create_app(services=users.service.app.state.services)):  # the API starts again
        pass
    assert user_tables_holding(db, MARK) == {}
