"""Team collections over HTTP (issue 27): A owns a collection, B is its viewer, C its editor, D is no
member. Members find its documents through /search, /chat and /research; D never does; roles decide
writes (403 with a message); a collection D cannot see is a 404; a removal counts at once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.jobs.worker import Worker
from backend.llm import ExtractiveLLM
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.fake_http import serve

A, B, C, D = (uuid.UUID(int=n) for n in (0xA, 0xB, 0xC, 0xD))
PLAN = {
    "external_id": "plan",
    "title": "火星基地计划",
    "content": "火星基地的氧气由电解冰层获得，每名宇航员每天需要八百克氧气。",
}
QUESTION = "火星基地的氧气从哪里来？"


@dataclass
class Team:
    a: TestClient
    b: TestClient
    c: TestClient
    d: TestClient
    service: TestClient
    collection: str
    plan: str  # the document A put into the collection


def post(client: TestClient, path: str, body: dict, status: int = 200) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    return response.json()


@pytest.fixture
def team(make_services) -> Iterator[Team]:
    key = es256("es-team")
    server = FakeAuthServer([key])
    with serve(server.respond) as url:
        services = make_services(
            llm=ExtractiveLLM(), auth_mode="supabase", supabase_url=url, service_api_key=SERVICE_KEY
        )
        issuer = f"{url}/auth/v1"

        def as_bearer(token: str) -> TestClient:
            client = TestClient(create_app(services=services), headers={"Authorization": f"Bearer {token}"})
            client.__enter__()
            return client

        a, b, c, d = (as_bearer(mint(key, issuer=issuer, sub=str(u))) for u in (A, B, C, D))
        collection = post(a, "/collections", {"name": "航天组"}, status=201)["id"]
        assert a.put(f"/collections/{collection}/members/{B}", json={"role": "viewer"}).status_code == 204
        assert a.put(f"/collections/{collection}/members/{C}", json={"role": "editor"}).status_code == 204
        plan = post(a, "/documents", {**PLAN, "collection_id": collection})["documents"][0]["document_id"]
        yield Team(a, b, c, d, as_bearer(SERVICE_KEY), collection, plan)


def titles(hits: dict) -> set[str]:
    return {h["title"] for h in hits["results"]}


def search(client: TestClient, **kw) -> dict:
    return post(client, "/search", {"query": QUESTION, "dynamic": False, "top_k": 10, **kw})


def test_members_find_the_collections_documents_and_a_non_member_never_does(team):
    for member in (team.a, team.b, team.c):
        assert "火星基地计划" in titles(search(member))
        narrowed = search(member, collections=[team.collection])
        assert titles(narrowed) == {"火星基地计划"}
        assert narrowed["diagnostics"]["scope"] == {"kind": "collections", "collections": [team.collection]}
        reply = post(member, "/chat", {"message": QUESTION, "collections": [team.collection]})
        assert "火星基地计划" in {s["title"] for s in reply["sources"]}
        assert reply["diagnostics"]["retrieval"]["scope"]["kind"] == "collections"
        run = post(member, "/research", {"question": QUESTION, "collections": [team.collection]})
        assert "plan" in {s["external_id"] for s in run["sources"]}
        assert run["diagnostics"]["scope"]["collections"] == [team.collection]

    assert "火星基地计划" not in titles(search(team.d))
    assert search(team.d)["diagnostics"]["scope"] == {"kind": "everything", "collections": None}
    reply = post(team.d, "/chat", {"message": QUESTION})
    assert "火星基地计划" not in {s["title"] for s in reply["sources"]}
    run = post(team.d, "/research", {"question": QUESTION})
    assert "plan" not in {s["external_id"] for s in run["sources"]}
    # A collection D cannot see does not exist for D, wherever it is named.
    assert team.d.get(f"/collections/{team.collection}").status_code == 404
    assert (
        team.d.post("/search", json={"query": QUESTION, "collections": [team.collection]}).status_code == 404
    )
    assert team.d.get(f"/documents/{team.plan}").status_code == 404
    assert team.d.get("/documents", params={"collection_id": team.collection}).status_code == 404
    assert [c["id"] for c in team.d.get("/collections").json()["items"]] == []


def test_a_narrowed_search_leaves_out_what_is_outside_the_collections(team):
    note = "火星基地的氧气也可以从大气中的二氧化碳提取。"
    post(team.b, "/documents", {"external_id": "own", "title": "B 的火星笔记", "content": note})
    assert titles(search(team.b)) == {"火星基地计划", "B 的火星笔记"}
    assert titles(search(team.b, collections=[team.collection])) == {"火星基地计划"}
    assert team.b.post("/search", json={"query": QUESTION, "collections": []}).status_code == 422


def test_roles_decide_who_writes_and_a_viewer_gets_a_403_that_says_why(team):
    # B (viewer) may read but not add, re-ingest, move in, delete or manage members.
    response = team.b.post(
        "/documents", json={**PLAN, "external_id": "b-new", "collection_id": team.collection}
    )
    assert response.status_code == 403
    assert "viewer" in response.json()["detail"]
    assert "editor" in response.json()["detail"]
    assert (
        team.b.post(
            "/documents", json={**PLAN, "content": "改", "collection_id": team.collection}
        ).status_code
        == 403
    )
    assert team.b.delete(f"/documents/{team.plan}").status_code == 403
    own = post(team.b, "/documents", {"external_id": "mine", "title": "B 的", "content": "私人文字。"})
    own_id = own["documents"][0]["document_id"]
    assert team.b.patch(f"/documents/{own_id}", json={"collection_id": team.collection}).status_code == 403
    assert (
        team.b.put(f"/collections/{team.collection}/members/{D}", json={"role": "viewer"}).status_code == 403
    )
    assert team.b.patch(f"/collections/{team.collection}", json={"name": "改名"}).status_code == 403
    assert team.b.get(f"/documents/{team.plan}").status_code == 200

    # C (editor) re-ingests A's document in place (still A's), adds one and deletes one.
    changed = {
        **PLAN,
        "content": PLAN["content"] + "备用氧气存放在二号舱。",
        "collection_id": team.collection,
    }
    outcome = post(team.c, "/documents", changed)["documents"][0]
    assert (outcome["status"], outcome["document_id"]) == ("updated", team.plan)
    assert team.a.get(f"/documents/{team.plan}").json()["owner_id"] == str(A)
    added = post(team.c, "/documents", {**PLAN, "external_id": "c-new", "collection_id": team.collection})
    added_id = added["documents"][0]["document_id"]
    assert team.b.get(f"/documents/{added_id}").status_code == 200
    assert team.c.delete(f"/documents/{added_id}").status_code == 204
    assert (
        team.c.put(f"/collections/{team.collection}/members/{D}", json={"role": "viewer"}).status_code == 403
    )

    # Uploads go into a collection too.
    files = {"files": ("notes.md", "# 火星\n\n火星车每天行驶两公里。".encode(), "text/markdown")}
    uploaded = team.c.post("/documents/upload", files=files, data={"collection_id": team.collection})
    assert uploaded.status_code == 200, uploaded.text
    listed = team.b.get("/documents", params={"collection_id": team.collection}).json()["items"]
    assert {d["title"] for d in listed} == {"火星基地计划", "火星"}
    assert all(d["collection_id"] == team.collection for d in listed)
    detail = team.b.get(f"/collections/{team.collection}").json()
    assert {(m["user_id"], m["role"]) for m in detail["members"]} == {
        (str(A), "admin"),
        (str(B), "viewer"),
        (str(C), "editor"),
    }
    assert detail["role"] == "viewer"
    assert detail["document_count"] == 2


def test_removing_a_member_revokes_at_once_and_erases_what_they_kept(team):
    reply = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})
    assert "火星基地计划" in {s["title"] for s in reply["sources"]}
    assert team.a.delete(f"/collections/{team.collection}/members/{B}").status_code == 204

    assert "火星基地计划" not in titles(search(team.b))
    assert team.b.get(f"/documents/{team.plan}").status_code == 404
    assert (
        team.b.post("/search", json={"query": QUESTION, "collections": [team.collection]}).status_code == 404
    )
    messages = team.b.get(f"/conversations/{reply['conversation_id']}/messages").json()
    kept = [s for m in messages for s in m["sources"] if s.get("document_id") == team.plan]
    assert not kept or all(s["deleted"] and s["snippet"] == "" for s in kept)
    # C is still a member; the owner cannot be removed or demoted.
    assert "火星基地计划" in titles(search(team.c))
    assert team.a.delete(f"/collections/{team.collection}/members/{A}").status_code == 403
    assert (
        team.a.put(f"/collections/{team.collection}/members/{A}", json={"role": "viewer"}).status_code == 403
    )


def test_a_member_can_leave(team):
    assert team.c.delete(f"/collections/{team.collection}/members/{C}").status_code == 204
    assert "火星基地计划" not in titles(search(team.c))


def test_deleting_a_collection_leaves_its_documents_to_their_owners(team):
    c_doc = post(team.c, "/documents", {**PLAN, "external_id": "c-doc", "collection_id": team.collection})
    c_doc_id = c_doc["documents"][0]["document_id"]
    assert team.c.delete(f"/collections/{team.collection}").status_code == 403  # only the owner
    assert team.a.delete(f"/collections/{team.collection}").status_code == 204

    assert team.a.get(f"/collections/{team.collection}").status_code == 404
    assert team.c.get(f"/documents/{c_doc_id}").json()["collection_id"] is None
    assert team.a.get(f"/documents/{c_doc_id}").status_code == 404
    assert team.a.get(f"/documents/{team.plan}").json()["visibility"] == "private"
    assert team.b.get(f"/documents/{team.plan}").status_code == 404
    assert "火星基地计划" in titles(search(team.a))
    assert "火星基地计划" not in titles(search(team.b))


def test_documents_move_into_and_out_of_a_collection(team):
    text = "火星基地的氧气储备需要每周检查一次。"
    own = post(team.c, "/documents", {"external_id": "draft", "title": "C 的草稿", "content": text})
    draft = own["documents"][0]["document_id"]
    assert team.b.get(f"/documents/{draft}").status_code == 404
    moved = team.c.patch(f"/documents/{draft}", json={"collection_id": team.collection})
    assert moved.status_code == 200
    assert moved.json()["collection_id"] == team.collection
    assert "C 的草稿" in titles(search(team.b, collections=[team.collection]))
    assert team.c.patch(f"/documents/{draft}", json={"collection_id": None}).status_code == 200
    assert team.b.get(f"/documents/{draft}").status_code == 404
    assert team.d.patch(f"/documents/{team.plan}", json={"collection_id": None}).status_code == 404


def test_re_ingesting_a_document_into_another_collection_erases_it_from_its_former_readers_answers(team):
    """A re-ingestion that names another collection moves the document as PATCH does: B, who read it in
    the first collection and is no member of the second, keeps no copy of its text in a stored answer
    (on a Citus cluster B's answer lives on another shard than A's document)."""
    answer = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})
    conversation = answer["conversation_id"]

    def cited_by_b() -> list[dict]:
        messages = team.b.get(f"/conversations/{conversation}/messages").json()
        return [s for m in messages for s in m["sources"] if s.get("document_id") == team.plan]

    assert cited_by_b()[0]["snippet"]
    other = post(team.a, "/collections", {"name": "后勤组"}, status=201)["id"]
    moved = post(team.a, "/documents", {**PLAN, "collection_id": other})["documents"][0]
    assert (moved["document_id"], moved["status"]) == (team.plan, "updated")
    assert team.b.get(f"/documents/{team.plan}").status_code == 404
    assert all(s["deleted"] and s["snippet"] == "" for s in cited_by_b())


def test_the_scope_is_stored_with_the_conversation(team):
    first = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})
    listed = {c["id"]: c for c in team.b.get("/conversations").json()}
    assert listed[first["conversation_id"]]["collections"] == [team.collection]
    follow = post(
        team.b, "/chat", {"message": "每天需要多少氧气？", "conversation_id": first["conversation_id"]}
    )
    assert follow["diagnostics"]["retrieval"]["scope"]["collections"] == [team.collection]
    reset = post(
        team.b,
        "/chat",
        {"message": "每天需要多少氧气？", "conversation_id": first["conversation_id"], "collections": None},
    )
    assert reset["diagnostics"]["retrieval"]["scope"]["kind"] == "everything"
    assert {c["id"]: c for c in team.b.get("/conversations").json()}[first["conversation_id"]][
        "collections"
    ] is None


def test_collections_belong_to_users_and_validate_their_input(team):
    assert team.service.post("/collections", json={"name": "x"}).status_code == 422
    assert team.a.post("/collections", json={"name": "  "}).status_code == 422
    assert (
        team.a.put(f"/collections/{team.collection}/members/{D}", json={"role": "owner"}).status_code == 422
    )
    assert team.a.patch(f"/collections/{team.collection}", json={"name": "火星组"}).json()["name"] == "火星组"
    mine = team.a.get("/collections").json()["items"]
    assert [(c["name"], c["role"], c["member_count"]) for c in mine] == [("火星组", "admin", 3)]


def test_the_openai_compatible_api_takes_collections_in_its_pgrag_extension(team):
    def complete(client: TestClient, **pgrag) -> dict:
        body = {"model": "pgrag", "messages": [{"role": "user", "content": QUESTION}], "pgrag": pgrag}
        response = client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    reply = complete(team.b, collections=[team.collection])
    assert "火星基地计划" in {s["title"] for s in reply["pgrag"]["sources"]}
    body = {"model": "pgrag", "messages": [{"role": "user", "content": QUESTION}]}
    refused = team.d.post("/v1/chat/completions", json={**body, "pgrag": {"collections": [team.collection]}})
    assert refused.status_code == 404


def test_an_owner_demoted_to_viewer_gets_a_403_for_re_ingesting_their_document_in_the_collection(team):
    """Ingesting without collection_id keeps a document in its collection: the collection's rules apply."""
    added = post(team.c, "/documents", {**PLAN, "external_id": "c-doc", "collection_id": team.collection})
    assert (
        team.a.put(f"/collections/{team.collection}/members/{C}", json={"role": "viewer"}).status_code == 204
    )
    response = team.c.post("/documents", json={**PLAN, "external_id": "c-doc", "content": "新的内容。"})
    assert response.status_code == 403, response.text
    assert "viewer" in response.json()["detail"]
    # Taking it out is still the owner's right; then it is theirs to change.
    document_id = added["documents"][0]["document_id"]
    assert team.c.patch(f"/documents/{document_id}", json={"collection_id": None}).status_code == 200
    assert (
        post(team.c, "/documents", {**PLAN, "external_id": "c-doc", "content": "新的内容。"})["documents"][0][
            "status"
        ]
        == "updated"
    )


def test_small_talk_in_a_narrowed_conversation_keeps_its_scope(team):
    first = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})
    post(team.b, "/chat", {"message": "你好", "conversation_id": first["conversation_id"]})
    listed = {c["id"]: c for c in team.b.get("/conversations").json()}
    assert listed[first["conversation_id"]]["collections"] == [team.collection]


def test_a_background_upload_goes_into_the_collection_and_a_viewer_is_refused_at_once(team):
    """A job carries its collection: the worker ingests the files into it as the submitter, so the members
    find them; a viewer's background upload is a 403 when it is submitted, not a failed file later."""
    files = [
        (
            "files",
            ("rover.md", "# 火星车\n\n火星车每天行驶两百米，用太阳能电池板充电。".encode(), "text/markdown"),
        )
    ]
    refused = team.b.post(
        "/documents/upload",
        params={"background": "true"},
        data={"collection_id": team.collection},
        files=files,
    )
    assert refused.status_code == 403, refused.text
    assert "viewer" in refused.json()["detail"]

    accepted = team.c.post(
        "/documents/upload",
        params={"background": "true"},
        data={"collection_id": team.collection},
        files=files,
    )
    assert accepted.status_code == 202, accepted.text
    job = team.c.get(accepted.json()["status_url"]).json()
    assert job["collection_id"] == team.collection
    services = team.c.app.state.services
    assert Worker(services.db, services.ingestion, services.settings, name="t").drain() == 1
    assert team.c.get(accepted.json()["status_url"]).json()["counts"]["done"] == 1
    question = {"query": "火星车每天行驶多远？", "dynamic": False, "top_k": 10}
    assert "火星车" in titles(post(team.b, "/search", question))  # a member finds it
    assert "火星车" not in titles(post(team.d, "/search", question))  # D never does
    listed = team.a.get("/documents", params={"collection_id": team.collection}).json()["items"]
    assert "火星车" in {d["title"] for d in listed}


def test_mine_lists_the_callers_own_documents_outside_collections(team):
    """The page's "my documents": neither the shared corpus nor a collection's documents, however
    recently they changed; mine with a collection is a 422."""
    shared = {"external_id": "shared", "title": "共享手册", "content": "共享的内容。"}
    post(team.service, "/documents", shared)
    note = {"external_id": "mine", "title": "我的笔记", "content": "我自己的笔记。"}
    own = post(team.a, "/documents", note)
    listed = team.a.get("/documents", params={"mine": "true"}).json()
    assert [d["title"] for d in listed["items"]] == ["我的笔记"]
    assert listed["items"][0]["id"] == own["documents"][0]["document_id"]
    assert listed["total"] == 1
    assert team.b.get("/documents", params={"mine": "true"}).json()["total"] == 0
    everything = {d["title"] for d in team.a.get("/documents").json()["items"]}
    assert {"共享手册", "我的笔记", PLAN["title"]} <= everything
    both = team.a.get("/documents", params={"mine": "true", "collection_id": team.collection})
    assert both.status_code == 422, both.text
    assert "mine" in both.json()["detail"]
