"""Deleting a document erases every copy of its text the product made: a user ingests a document with
unique markers, chats and runs research citing it, deletes it, and no table holds a marker any more;
the old answer still renders, its source listed as deleted."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from fastapi.testclient import TestClient
from psycopg.types.json import Jsonb

from backend.api.app import create_app
from backend.db.connection import connect
from backend.db.identity import apply_identity
from backend.testing import ScriptedLLM
from backend.testing.llm import citing_first
from tests.factories import insert_conversation, insert_document
from tests.test_privacy_sql import B, build_world, marker_hits

TEXT_MARK = "zqxerasetext"  # in the document's text
TITLE_MARK = "zqxerasetitle"  # in its title and external id
SECRET = {
    "external_id": f"{TITLE_MARK}.md",
    "title": f"星河计划 {TITLE_MARK}",
    "content": f"星河计划的预算是三百万元，内部代号 {TEXT_MARK}，明年三月启动。",
}
OTHER = {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"}


@pytest.fixture
def client(make_services):
    # The answers cite [1] without quoting it: what the model wrote is the user's conversation and is
    # kept (README: the limits of erasure); the test looks for the copies the product made.
    services = make_services(llm=ScriptedLLM(answers=citing_first("预算是三百万元[{n}]。")))
    with TestClient(create_app(services=services)) as client:
        yield client


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def user_tables_holding(db, marker: str) -> dict[str, int]:
    """Every table and view outside the system catalogs, read as the tables' owner (no RLS)."""
    return {
        k: v
        for k, v in marker_hits(db, marker).items()
        if not k.startswith(("pg_catalog.", "information_schema."))
    }


def test_deleting_a_document_leaves_no_copy_of_its_text_and_old_answers_say_it_was_deleted(client, db):
    doc = ok(client.post("/documents", json=SECRET))["documents"][0]["document_id"]
    ok(client.post("/documents", json=OTHER))
    chat = ok(client.post("/chat", json={"message": "星河计划的预算是多少？"}))
    assert chat["sources"][0]["document_id"] == doc
    assert TEXT_MARK in chat["sources"][0]["snippet"]
    run = ok(client.post("/research", json={"question": "星河计划的预算是多少？"}))
    assert [s["document_id"] for s in run["sources"]][:1] == [doc]
    for marker in (TEXT_MARK, TITLE_MARK):
        assert {"public.messages", "public.research_runs", "public.chunks"} <= set(
            user_tables_holding(db, marker)
        )

    assert client.delete(f"/documents/{doc}").status_code == 204

    assert user_tables_holding(db, TEXT_MARK) == {}
    assert user_tables_holding(db, TITLE_MARK) == {}

    # The answer still renders; its source is listed, marked deleted, without the passage.
    messages = ok(client.get(f"/conversations/{chat['conversation_id']}/messages"))
    assert messages[1]["content"] == chat["answer"]
    source = messages[1]["sources"][0]
    assert (source["n"], source["cited"], source["document_id"]) == (1, True, doc)
    assert source["deleted"] is True
    assert (source["stale"], source["stale_reason"]) == (True, "document deleted")
    assert source["snippet"] == ""
    assert source["title"] == ""
    # The research report and its run: the source is listed as deleted, the other sources untouched.
    report = ok(client.get(f"/conversations/{run['conversation_id']}/messages"))[1]
    assert report["sources"][0]["deleted"] is True
    assert "- [1] （文档已删除）" in report["content"]
    stored = ok(client.get(f"/research/{run['run_id']}"))["result"]
    assert stored["sources"][0]["deleted"] is True
    assert stored["sources"][0]["snippet"] == ""
    assert stored["report"] == report["content"]
    assert [s.get("deleted", False) for s in stored["sources"][1:]] == [False] * (len(stored["sources"]) - 1)
    # Its evidence records (migration 030): the deleted document's statement and title erased.
    records = stored["diagnostics"]["sections"][0]["evidence_records"]
    gone = [r for r in records if r["document_id"] == doc]
    assert gone
    assert all((r["deleted"], r["statement"], r["source"]) == (True, "", "") for r in gone)


def test_re_ingesting_keeps_the_old_passage_and_marks_it_changed(client):
    doc = ok(client.post("/documents", json=SECRET))["documents"][0]["document_id"]
    chat = ok(client.post("/chat", json={"message": "星河计划的预算是多少？"}))
    ok(client.post("/documents", json={**SECRET, "content": "星河计划已取消。"}))
    source = ok(client.get(f"/conversations/{chat['conversation_id']}/messages"))[1]["sources"][0]
    assert source["document_id"] == doc
    assert (source["stale"], source["stale_reason"], source["deleted"]) == (True, "document changed", False)
    assert TEXT_MARK in source["snippet"]  # the version the answer was written from


# --- the same rules one level down, in SQL ------------------------------------------------------------


def _source(document_id, n: int = 1) -> dict:
    return {
        "n": n,
        "kind": "local",
        "document_id": str(document_id),
        "snippet": "片段",
        "title": "标题",
        "heading": "",
        "external_id": "x",
        "content_hash": "h",
        "cited": True,
    }


def test_a_source_its_owner_cannot_read_is_stored_erased_like_a_missing_one(db):
    """B writing (through PostgREST) a message that cites A's private document learns nothing: it is
    stored exactly like a citation of a document that does not exist."""
    world = build_world(db)
    with db.transaction():
        apply_identity(db, B)
        stored = [
            db.execute(
                "insert into messages (conversation_id, role, content, sources) "
                "values (%s, 'assistant', 'x', %s) returning sources",
                (world.b_conversation, Jsonb([_source(target)])),
            ).fetchone()[0][0]
            for target in (world.a_doc, uuid.uuid4(), "not-a-uuid")
        ]
        public = db.execute(
            "insert into messages (conversation_id, role, content, sources) "
            "values (%s, 'assistant', 'x', %s) returning sources",
            (world.b_conversation, Jsonb([_source(world.public_doc)])),
        ).fetchone()[0][0]
    erased = {k: v for k, v in stored[0].items() if k != "document_id"}
    assert all({k: v for k, v in s.items() if k != "document_id"} == erased for s in stored)
    assert erased["deleted"] is True
    assert erased["snippet"] == ""
    assert erased["title"] == ""
    assert public == _source(world.public_doc)  # a document B may read is kept as written


def test_a_message_written_while_its_document_is_deleted_is_erased_too(database_url, db):
    """The chat turn that retrieved a passage commits after the document's deletion started: the
    deletion waits for it (the message locked the document), then erases it."""
    doc = insert_document(db, title="公开", visibility="public")
    conversation = insert_conversation(db, owner_id=None)
    writer = connect(database_url)  # a transaction of its own, like the request's
    deleted = threading.Event()
    try:
        writer.execute(
            "insert into messages (conversation_id, role, content, sources) "
            "values (%s, 'assistant', 'x', %s)",
            (conversation, Jsonb([_source(doc)])),
        )

        def delete() -> None:
            with connect(database_url, autocommit=True) as other:
                other.execute("delete from documents where id = %s", (doc,))
            deleted.set()

        thread = threading.Thread(target=delete)
        thread.start()
        assert not deleted.wait(1.0)  # the delete waits for the message's transaction
        writer.commit()
        thread.join(10)
        assert deleted.is_set()
    finally:
        writer.close()
    sources = db.execute(
        "select sources from messages where conversation_id = %s", (conversation,)
    ).fetchone()[0]
    assert sources[0]["deleted"] is True
    assert sources[0]["snippet"] == ""


def test_the_migration_erases_what_deletions_before_it_left(fresh_database):
    """A database that deleted a cited document before migration 018 kept the passage; upgrading
    erases it, and leaves alone what cites a document that still exists."""
    from alembic import command

    from backend.db import migrations

    url = fresh_database()
    command.upgrade(migrations.alembic_config(url), "017")
    with connect(url, autocommit=True) as conn:
        gone = insert_document(conn, title="旧文档", visibility="public")
        kept = insert_document(conn, title="留下", visibility="public")
        conversation = insert_conversation(conn, owner_id=None)
        conn.execute(
            "insert into messages (conversation_id, role, content, sources) "
            "values (%s, 'assistant', 'x', %s)",
            (conversation, Jsonb([_source(gone, 1), _source(kept, 2)])),
        )
        conn.execute("delete from documents where id = %s", (gone,))
    migrations.upgrade(url)
    with connect(url) as conn:
        row = conn.execute("select sources from messages").fetchone()
    assert row is not None
    first, second = row[0]
    assert (first["deleted"], first["snippet"], first["title"]) == (True, "", "")
    assert second == _source(kept, 2)


NAME = "Zqxname Okonkwo"  # a name the research steps took from the deleted document


def _run_result(document_id) -> tuple[dict, dict]:
    """A stored run's result and plan holding NAME wherever a research step keeps evidence's words."""
    section = {
        "index": 1,
        "title": "此人出生在哪里？",
        "question": f"{NAME}出生在哪里？",
        "loop": 0,
        "hop": {
            "asked": "此人出生在哪里？",
            "after": 0,
            "bridge": "此人",
            "entity": NAME,
            "method": "reflection",
            "question": f"{NAME}出生在哪里？",
        },
        "searches": [{"query": f"{NAME}出生在哪里？", "round": 0, "results": 3}],
        "sufficiency": [{"sufficient": False, "gap_queries": [f"{NAME} 出生地"]}],
        "reflections": [
            {
                "round": 0,
                "entities": [NAME],
                "candidates": [NAME],
                "hypotheses": [f"{NAME}生于拉各斯"],
                "answer": NAME,
                "anchors": ["出生"],
                "established": ["出生"],
            }
        ],
        "entity_checks": [{"entity": NAME, "round": 0, "status": "checked", "results": 1, "new": 1}],
        "candidates": [{"name": NAME, "status": "verified", "query": f"{NAME} 出生", "evidence": [1]}],
        "evidence_records": [],
    }
    first = {
        "index": 0,
        "title": "谁发现了它？",
        "question": "谁发现了它？",
        "loop": 0,
        "searches": [{"query": "谁发现了它？", "round": 0}, {"query": f"{NAME} 发现", "round": 1}],
    }
    gap = {
        "index": 2,
        "title": f"{NAME}的出生地",
        "question": f"{NAME}的出生地？",
        "loop": 1,
        "searches": [{"query": f"{NAME}的出生地？", "round": 0}],
    }
    chain = {
        "loops": 1,
        "verify": [
            {
                "loop": 0,
                "sufficient": False,
                "method": "heuristic",
                "gaps": [f"{NAME}的出生地？"],
                "hypotheses": [NAME],
                "skipped_gaps": [{"gap": NAME, "reason": "pruned before"}],
                "pruned": [{"index": 2, "question": f"{NAME}的出生地？", "reason": "nothing"}],
            }
        ],
        "pruned": [{"direction": f"{NAME} 出生", "reason": "its search found none"}],
        "hypotheses": [{"claim": NAME, "section": 1, "origin": "candidate"}],
    }
    result = {
        "sources": [_source(document_id)],
        "report": "报告[1]",
        "diagnostics": {"sections": [first, section, gap], "chain": chain},
    }
    plan = {
        "method": "heuristic",
        "sections": [
            {"title": "谁发现了它？", "question": "谁发现了它？", "queries": [], "loop": 0},
            {
                "title": f"{NAME}的出生地",
                "question": f"{NAME}的出生地？",
                "queries": [f"{NAME} 出生地"],
                "loop": 1,
            },
        ],
    }
    return result, plan


def test_deleting_a_document_erases_the_words_research_took_from_it(db):
    """Migration 032: the entity and candidate names, candidate and gap queries, a multi-hop step's
    carried answer and the verify's gaps of a run citing a deleted document are erased with it; a run
    citing a document that stays keeps them; what the user asked stays."""
    gone = insert_document(db, title="旧文档", visibility="public")
    kept = insert_document(db, title="留下", visibility="public")
    runs = {}
    for doc in (gone, kept):
        result, plan = _run_result(doc)
        runs[doc] = db.execute(
            "insert into research_runs (question, preset, status, finished_at, result, plan) "
            "values ('谁发现了它？此人出生在哪里？', 'lite', 'completed', now(), %s, %s) returning id",
            (Jsonb(result), Jsonb(plan)),
        ).fetchone()[0]
    db.execute("delete from documents where id = %s", (gone,))

    def stored(doc):
        return db.execute("select result, plan from research_runs where id = %s", (runs[doc],)).fetchone()

    result, plan = stored(gone)
    assert NAME not in json.dumps(result, ensure_ascii=False)
    assert NAME not in json.dumps(plan, ensure_ascii=False)
    first, section, gap = result["diagnostics"]["sections"]
    assert section["question"] == section["hop"]["question"] == "此人出生在哪里？"  # as asked
    assert section["hop"]["entity"] is None
    assert section["reflections"][0]["anchors"] == ["出生"]  # the question's words stay
    assert first["searches"][0]["query"] == "谁发现了它？"  # the user's own question
    assert len(first["searches"]) == 2  # counts stay
    assert len(section["candidates"]) == 1
    assert plan["sections"][0]["question"] == "谁发现了它？"
    assert _run_result(kept) == stored(kept)  # nothing of a readable document is touched
