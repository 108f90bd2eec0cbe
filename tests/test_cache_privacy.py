"""Caches scoped per caller (issue 24, migration 020): the embedding cache never confirms one user's
text to another, the web cache never tells one user what another asked, the query-embedding cache
serves each caller only its own questions, and deleting a document takes its cache entries with it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.auth import SHARED_SCOPE, user_identity
from backend.documents.reembed import reembed
from backend.ingest.documents import LoadedDocument
from backend.testing import HashingEmbedder, ScriptedLLM
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.factories import loaded_document
from tests.fake_http import serve

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
SALARY = {"external_id": "offer", "title": "录用通知", "content": "张伟的年薪为四十八万元，下月入职。"}
WRONG_GUESS = {**SALARY, "content": "张伟的年薪为五十万元，下月入职。"}
MEETING = {"external_id": "meeting", "title": "会议", "content": "裁员名单周五下午三点公布。"}
HANDBOOK = {"external_id": "handbook", "title": "员工手册", "content": "公司每年提供十五天带薪年假。"}


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, recording every text it is asked to embed."""

    def __init__(self, dims: int = 384) -> None:
        super().__init__(dims)
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents.extend(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


@dataclass
class Users:
    a: TestClient
    b: TestClient
    service: TestClient
    embedder: CountingEmbedder
    services: object


@pytest.fixture
def users(make_services) -> Iterator[Users]:
    yield from _users(make_services)


def _users(make_services, **settings) -> Iterator[Users]:
    key = es256("es-cache")
    server = FakeAuthServer([key])
    embedder = CountingEmbedder()
    with serve(server.respond) as url:
        services = make_services(
            embedder=embedder,
            llm=ScriptedLLM(answers=["答案[1]。"]),
            auth_mode="supabase",
            supabase_url=url,
            service_api_key=SERVICE_KEY,
            **settings,
        )
        issuer = f"{url}/auth/v1"

        def as_bearer(token: str) -> TestClient:
            client = TestClient(create_app(services=services), headers={"Authorization": f"Bearer {token}"})
            client.__enter__()
            return client

        yield Users(
            a=as_bearer(mint(key, issuer=issuer, sub=str(A), email="a@example.com")),
            b=as_bearer(mint(key, issuer=issuer, sub=str(B), email="b@example.com")),
            service=as_bearer(SERVICE_KEY),
            embedder=embedder,
            services=services,
        )


def ingest(client: TestClient, document: dict) -> dict:
    response = client.post("/documents", json=document)
    assert response.status_code == 200, response.text
    return response.json()


def cached_hashes(db, scope: uuid.UUID) -> set[str]:
    rows = db.execute("select content_hash from embedding_cache where scope = %s", (scope,)).fetchall()
    return {r[0] for r in rows}


def embed_hashes(services, *documents: dict) -> set[str]:
    """The embedding-cache keys of these API documents' chunks (the API ingests Markdown)."""
    return {
        c.embed_hash
        for d in documents
        for c in services.ingestion.prepare(
            loaded_document(d["external_id"], d["content"], d["title"])
        ).chunks
    }


def still_cached(db, hashes: set[str]) -> set[str]:
    """Which of these texts have a vector in the cache, in any scope."""
    rows = db.execute(
        "select content_hash from embedding_cache where content_hash = any(%s)", (list(hashes),)
    ).fetchall()
    return {r[0] for r in rows}


# --- the embedding cache ----------------------------------------------------------------------------


def test_another_users_private_text_is_never_confirmed_by_the_cache(users, db):
    ingest(users.a, SALARY)
    ingest(users.a, MEETING)
    users.embedder.documents.clear()
    right = ingest(users.b, SALARY)  # B's exact guess of A's private text
    wrong = ingest(users.b, {**WRONG_GUESS, "external_id": "guess-2"})
    # The right guess and the wrong one look alike: nothing cached, every chunk embedded afresh.
    assert (right["chunks_from_cache"], right["chunks_embedded"]) == (0, 1)
    assert (wrong["chunks_from_cache"], wrong["chunks_embedded"]) == (0, 1)
    assert len(users.embedder.documents) == 2
    assert any("四十八万" in text for text in users.embedder.documents)

    # After A deletes a document, a guess of its text confirms nothing either.
    docs = {d["external_id"]: d["id"] for d in users.a.get("/documents").json()["items"]}
    assert users.a.delete(f"/documents/{docs['meeting']}").status_code == 204
    after = ingest(users.b, MEETING)
    assert (after["chunks_from_cache"], after["chunks_embedded"]) == (0, 1)


def test_a_users_own_texts_come_from_the_cache_again(users, db):
    ingest(users.a, SALARY)
    users.embedder.documents.clear()
    # The same text again (another external id, or a metadata change): nothing embedded.
    again = ingest(users.a, {**SALARY, "external_id": "offer-copy"})
    assert (again["chunks_from_cache"], again["chunks_embedded"]) == (1, 0)
    assert users.embedder.documents == []
    # A's entries are in A's scope only: B's identical text is embedded (and cached for B).
    theirs = ingest(users.b, SALARY)
    assert (theirs["chunks_from_cache"], theirs["chunks_embedded"]) == (0, 1)
    assert cached_hashes(db, A) == cached_hashes(db, B) != set()
    assert cached_hashes(db, SHARED_SCOPE) == set()


def test_the_public_corpus_is_cached_for_everybody(users, db):
    users.services.ingestion.ingest(  # the CLI's path: the backend's own role, public documents
        [loaded_document(**HANDBOOK)], identity=None
    )
    ingest(users.service, {**HANDBOOK, "external_id": "handbook-2"})  # the service path: cached too
    users.embedder.documents.clear()
    for client in (users.a, users.b):
        private_copy = ingest(client, HANDBOOK)
        assert (private_copy["chunks_from_cache"], private_copy["chunks_embedded"]) == (1, 0)
    assert users.embedder.documents == []
    assert cached_hashes(db, A) == cached_hashes(db, B) == set()  # nothing new was written for them


def test_deleting_a_document_erases_its_entries_from_the_cache(users, db):
    ingest(users.a, SALARY)
    ingest(users.a, MEETING)
    salary, meeting = embed_hashes(users.services, SALARY), embed_hashes(users.services, MEETING)
    assert still_cached(db, salary | meeting) == salary | meeting
    docs = {d["external_id"]: d["id"] for d in users.a.get("/documents").json()["items"]}
    assert users.a.delete(f"/documents/{docs['offer']}").status_code == 204
    assert still_cached(db, salary) == set()
    assert still_cached(db, meeting) == meeting  # the other document's entries stay
    # Through SQL as the user (what PostgREST runs), the database erases just the same.
    with db.transaction():
        db.execute("select set_config('role', 'authenticated', true)")
        db.execute("select set_config('request.jwt.claims', %s, true)", (f'{{"sub": "{A}"}}',))
        assert db.execute("delete from documents where id = %s", (docs["meeting"],)).rowcount == 1
    assert still_cached(db, meeting) == set()
    assert db.execute("select count(*) from embedding_cache").fetchone() == (0,)


def test_replacing_a_documents_text_forgets_the_texts_it_no_longer_uses(services, db):
    alice = user_identity(A)

    def plan(budget: str) -> LoadedDocument:
        text = f"## 代号\n\n项目代号为青鸟，由研发部负责。\n\n## 预算\n\n预算{budget}万元，明年一月到位。"
        return loaded_document("plan", text, "计划")

    first, second = plan("三百"), plan("四百")
    v1, v2 = ({c.embed_hash for c in services.ingestion.prepare(d).chunks} for d in (first, second))
    services.ingestion.ingest([first], identity=alice)
    summary = services.ingestion.ingest([second], identity=alice)
    assert (summary.chunks_from_cache, summary.chunks_embedded) == (1, 1)  # the unchanged section reused
    assert still_cached(db, v1 | v2) == v2  # the replaced section's text is forgotten
    db.execute("delete from documents")
    assert still_cached(db, v1 | v2) == set()


def test_reembed_keeps_each_vector_in_its_owners_scope(make_services, db):
    alice = user_identity(A)
    old = make_services()
    old.ingestion.ingest([loaded_document(**SALARY)], identity=alice)
    old.ingestion.ingest([loaded_document(**HANDBOOK)], identity=None)
    new_embedder = CountingEmbedder(dims=768)
    new = make_services(embedder=new_embedder)
    assert reembed(new.pool, new.embedder, batch_size=10).embedded == 2
    # B, on the new model, is not served the vector the re-embedding made of A's text; the public one is.
    theirs = new.ingestion.ingest([loaded_document(**SALARY)], identity=user_identity(B))
    assert (theirs.chunks_from_cache, theirs.chunks_embedded) == (0, 1)
    public = new.ingestion.ingest([loaded_document(**HANDBOOK)], identity=user_identity(B))
    assert (public.chunks_from_cache, public.chunks_embedded) == (1, 0)


def test_reembed_records_the_cache_key_of_older_chunks_so_deletion_erases_them(make_services, db):
    alice = user_identity(A)
    make_services().ingestion.ingest([loaded_document(**SALARY)], identity=alice)
    db.execute("update chunks set embed_hash = null")  # as chunks written before migration 020
    new = make_services(embedder=HashingEmbedder(dims=768))
    reembed(new.pool, new.embedder, batch_size=10)
    assert db.execute("select count(*) from chunks where embed_hash is null").fetchone() == (0,)
    assert {r[0] for r in db.execute("select model from embedding_cache where scope = %s", (A,))} == {
        "hashing-test@384",
        "hashing-test@768",
    }
    db.execute("delete from documents")
    assert cached_hashes(db, A) == set()  # both models' vectors


# --- the query-embedding cache ------------------------------------------------------------------------


def test_a_question_another_user_asked_is_embedded_again(users):
    users.embedder.queries.clear()
    body = {"query": "张伟的年薪是多少？", "dynamic": False}
    for client in (users.a, users.a, users.b):
        assert client.post("/search", json=body).status_code == 200
    assert len(users.embedder.queries) == 2  # A's repeat was a hit; B's search was not served A's vector


# --- the web cache ----------------------------------------------------------------------------------------


@pytest.fixture
def web_users(make_services, fake_web) -> Iterator[Users]:
    yield from _users(
        make_services,
        web_search_provider="tavily",
        tavily_api_key=fake_web.api_key,
        tavily_base_url=fake_web.base_url,
        web_allow_private_addresses=True,
        web_backoff_base_s=0.01,
        web_deep_read_top_n=0,
    )


def test_the_web_cache_never_tells_one_user_what_another_asked(web_users, fake_web, db):
    def web_leg(client: TestClient) -> dict:
        response = client.post("/search", json={"query": "大熊猫 吃 竹子", "web": True})
        assert response.status_code == 200, response.text
        [provider] = response.json()["web_diagnostics"]["providers"]
        return provider

    first_a = web_leg(web_users.a)
    b_asks = web_leg(web_users.b)
    again_a = web_leg(web_users.a)
    assert first_a["cached"] is False
    assert (b_asks["cached"], b_asks["attempts"] >= 1) == (False, True)
    assert (again_a["cached"], again_a["attempts"]) == (True, 0)
    assert fake_web.count() == 2
    [question_kept] = db.execute(
        "select count(*) from web_search_cache w where row_to_json(w)::text like '%%大熊猫 吃%%'"
    ).fetchone()
    assert question_kept == 0
