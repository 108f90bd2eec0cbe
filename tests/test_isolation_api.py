"""Users over HTTP with AUTH_MODE=supabase: each sees the shared corpus and their own documents and
conversations, never another user's - and PostgreSQL's RLS, not only Python, decides it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.testing import ScriptedLLM
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.fake_http import serve

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
SECRET_A = {
    "external_id": "recipe",
    "title": "A 的秘密配方",
    "content": "紫薯芝士蛋糕需要三百克紫薯和两勺蜂蜜。",
}
NOTE_B = {"external_id": "recipe", "title": "B 的笔记", "content": "乌龙茶适合用九十度的水冲泡。"}
SHARED = {"external_id": "handbook", "title": "员工手册", "content": "公司每年提供十五天带薪年假。"}


@dataclass
class Users:
    anonymous: TestClient
    a: TestClient
    b: TestClient
    service: TestClient


@pytest.fixture
def users(make_services) -> Iterator[Users]:
    key = es256("es-iso")
    server = FakeAuthServer([key])
    with serve(server.respond) as url:
        services = make_services(
            llm=ScriptedLLM(answers=["答案[1]。"]),
            auth_mode="supabase",
            supabase_url=url,
            service_api_key=SERVICE_KEY,
        )
        issuer = f"{url}/auth/v1"

        def as_bearer(token: str) -> TestClient:
            client = TestClient(create_app(services=services), headers={"Authorization": f"Bearer {token}"})
            client.__enter__()
            return client

        anonymous = TestClient(create_app(services=services))
        anonymous.__enter__()
        yield Users(
            anonymous=anonymous,
            a=as_bearer(mint(key, issuer=issuer, sub=str(A), email="a@example.com")),
            b=as_bearer(mint(key, issuer=issuer, sub=str(B), email="b@example.com")),
            service=as_bearer(SERVICE_KEY),
        )


def post(client: TestClient, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_without_a_token_only_health_and_docs_answer(users):
    response = users.anonymous.get("/documents")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert users.anonymous.post("/search", json={"query": "年假"}).status_code == 401
    assert users.anonymous.get("/health").status_code == 200
    assert users.anonymous.get("/openapi.json").status_code == 200


def test_a_users_documents_are_theirs_and_the_shared_corpus_is_everyones(users):
    a_doc = post(users.a, "/documents", SECRET_A)["documents"][0]["document_id"]
    post(users.b, "/documents", NOTE_B)  # the same external_id: each user has their own namespace
    shared = post(users.service, "/documents", SHARED)["documents"][0]["document_id"]

    a_titles = {d["title"] for d in users.a.get("/documents").json()["items"]}
    b_titles = {d["title"] for d in users.b.get("/documents").json()["items"]}
    assert a_titles == {"A 的秘密配方", "员工手册"}
    assert b_titles == {"B 的笔记", "员工手册"}
    listed = {d["title"]: d for d in users.a.get("/documents").json()["items"]}
    assert (listed["A 的秘密配方"]["visibility"], listed["A 的秘密配方"]["owner_id"]) == ("private", str(A))
    assert (listed["员工手册"]["visibility"], listed["员工手册"]["owner_id"]) == ("public", None)

    # B cannot read, find, cite or delete A's document, and learns nothing about it (404, not 403).
    assert users.b.get(f"/documents/{a_doc}").status_code == 404
    assert users.b.delete(f"/documents/{a_doc}").status_code == 404
    hits = post(users.b, "/search", {"query": "紫薯芝士蛋糕要多少紫薯？", "dynamic": False, "top_k": 10})
    assert "A 的秘密配方" not in {h["title"] for h in hits["results"]}
    reply = post(users.b, "/chat", {"message": "紫薯芝士蛋糕要多少紫薯？"})
    assert "A 的秘密配方" not in {s["title"] for s in reply["sources"]}
    assert "紫薯" not in reply["answer"]

    # A finds it; the shared corpus is read-only for users.
    hits = post(users.a, "/search", {"query": "紫薯芝士蛋糕要多少紫薯？"})
    assert hits["results"][0]["title"] == "A 的秘密配方"
    assert users.a.delete(f"/documents/{shared}").status_code == 403
    assert users.b.get(f"/documents/{shared}").status_code == 200
    assert users.a.delete(f"/documents/{a_doc}").status_code == 204
    assert users.service.delete(f"/documents/{shared}").status_code == 204


def test_conversations_belong_to_one_user(users):
    post(users.service, "/documents", SHARED)
    mine = post(users.a, "/chat", {"message": "每年有几天年假？"})
    conversation = mine["conversation_id"]
    assert [c["id"] for c in users.a.get("/conversations").json()] == [conversation]
    assert users.b.get("/conversations").json() == []
    assert users.b.get(f"/conversations/{conversation}/messages").status_code == 404
    follow_up = users.b.post("/chat", json={"message": "那病假呢？", "conversation_id": conversation})
    assert follow_up.status_code == 404
    assert len(users.a.get(f"/conversations/{conversation}/messages").json()) == 2  # nothing was added


def test_research_runs_and_their_evidence_belong_to_one_user(users, db):
    post(users.a, "/documents", SECRET_A)
    mine = post(users.a, "/research", {"question": "紫薯芝士蛋糕要多少紫薯？"})
    assert [s["title"] for s in mine["sources"]] == ["A 的秘密配方"]  # A's private document, cited
    run = mine["run_id"]
    assert users.a.get(f"/research/{run}").json()["status"] == "completed"
    assert [r["id"] for r in users.a.get("/research").json()] == [run]
    # B sees neither the run nor A's document through research, and cannot add to A's conversation.
    assert users.b.get(f"/research/{run}").status_code == 404
    assert users.b.get("/research").json() == []
    theirs = post(users.b, "/research", {"question": "紫薯芝士蛋糕要多少紫薯？"})
    assert theirs["sources"] == []
    follow_up = {"question": "蜂蜜呢？", "conversation_id": mine["conversation_id"]}
    assert users.b.post("/research", json=follow_up).status_code == 404
    claims = f'{{"sub": "{B}", "role": "authenticated"}}'
    with db.transaction():
        db.execute(
            "select set_config('role', 'authenticated', true), set_config('request.jwt.claims', %s, true)",
            (claims,),
        )
        assert db.execute("select count(*) from research_runs").fetchone() == (1,)  # B's own
        db.execute("reset role")
    assert db.execute("select count(*) from research_runs").fetchone() == (2,)


def test_the_database_itself_hides_another_users_rows(users, db):
    """Not only the Python filters: a session as B (what PostgREST runs on Supabase) reads none of A's."""
    post(users.a, "/documents", SECRET_A)
    post(users.a, "/chat", {"message": "紫薯芝士蛋糕要多少紫薯？"})
    claims = f'{{"sub": "{B}", "role": "authenticated"}}'
    with db.transaction():
        db.execute(
            "select set_config('role', 'authenticated', true), set_config('request.jwt.claims', %s, true)",
            (claims,),
        )
        for table in ("documents", "chunks", "conversations", "messages"):
            assert db.execute(f"select count(*) from {table}").fetchone() == (0,), table
        db.execute("reset role")
    assert db.execute("select count(*) from chunks").fetchone()[0] > 0


def test_search_diagnostics_give_b_no_document_frequency_of_as_private_words(users):
    """The idf of /search's diagnostics is computed from what the caller may read: for B, a word only
    A's private document holds weighs exactly like a word no document holds (issue 24, finding 1)."""
    post(users.a, "/documents", SECRET_A)
    post(users.service, "/documents", SHARED)
    query = {"query": "紫薯 芝士 zqxq7 年假", "dynamic": False}
    b_idfs = post(users.b, "/search", query)["diagnostics"]["query_term_idfs"]
    assert b_idfs["紫薯"] == b_idfs["芝士"] == b_idfs["zqxq7"]  # A's words, and a word nobody wrote
    assert b_idfs["年"] < b_idfs["zqxq7"]  # the shared corpus counts for everyone
    a_idfs = post(users.a, "/search", query)["diagnostics"]["query_term_idfs"]
    assert a_idfs["紫薯"] < a_idfs["zqxq7"]  # A's own words count for A


def test_a_documents_text_is_read_only_by_who_may_read_the_document(users):
    a_doc = post(users.a, "/documents", SECRET_A)["documents"][0]["document_id"]
    params = {"start": 0, "end": 5}
    assert "紫薯芝士蛋糕" in users.a.get(f"/documents/{a_doc}/text", params=params).json()["text"]
    response = users.b.get(f"/documents/{a_doc}/text", params=params)
    assert response.status_code == 404
    assert "紫薯" not in response.text
