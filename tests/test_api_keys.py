"""Personal API keys (issue 28): created by a signed-in user, shown once, acting as that user under
RLS on every route, revoked at once, and never visible to another user - through the API or in SQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.auth import user_identity
from backend.composition import Services
from backend.testing import ScriptedLLM
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.factories import acting_as
from tests.fake_http import serve

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
SECRET_A = {"external_id": "plan", "title": "A 的计划", "content": "紫薯项目的预算是三百万元。"}


@dataclass
class Users:
    services: Services
    anonymous: TestClient
    a: TestClient
    b: TestClient
    service: TestClient

    def bearer(self, token: str) -> TestClient:
        client = TestClient(create_app(services=self.services), headers={"Authorization": f"Bearer {token}"})
        client.__enter__()
        return client


@pytest.fixture
def users(make_services) -> Iterator[Users]:
    key = es256("es-keys")
    server = FakeAuthServer([key])
    with serve(server.respond) as url:
        services = make_services(
            llm=ScriptedLLM(answers=["答案[1]。"]),
            auth_mode="supabase",
            supabase_url=url,
            service_api_key=SERVICE_KEY,
        )
        issuer = f"{url}/auth/v1"
        anonymous = TestClient(create_app(services=services))
        anonymous.__enter__()
        users = Users(services=services, anonymous=anonymous, a=anonymous, b=anonymous, service=anonymous)
        users.a = users.bearer(mint(key, issuer=issuer, sub=str(A), email="a@example.com"))
        users.b = users.bearer(mint(key, issuer=issuer, sub=str(B), email="b@example.com"))
        users.service = users.bearer(SERVICE_KEY)
        yield users


def create_key(client: TestClient, **body) -> dict:
    response = client.post("/api-keys", json={"name": "Open WebUI", **body})
    assert response.status_code == 201, response.text
    return response.json()


def test_a_key_is_shown_once_and_acts_as_its_owner_everywhere(users):
    users.a.post("/documents", json=SECRET_A).raise_for_status()
    created = create_key(users.a)
    key = created["key"]
    assert key.startswith("pgr_")
    assert len(key) >= 40
    listed = users.a.get("/api-keys").json()
    assert [k["id"] for k in listed] == [created["id"]]
    assert "key" not in listed[0]
    assert listed[0]["prefix"] == key[:12]
    assert key not in users.a.get("/api-keys").text  # never again, not even to its owner

    with_key = users.bearer(key)
    assert [d["external_id"] for d in with_key.get("/documents").json()["items"]] == ["plan"]
    hits = with_key.post("/search", json={"query": "紫薯项目的预算"}).json()["results"]
    assert hits
    assert hits[0]["external_id"] == "plan"
    # What the key writes is its owner's: A's own session sees the key's conversation.
    turn = with_key.post("/chat", json={"message": "紫薯项目的预算是多少？"}).json()
    assert turn["conversation_id"] in {c["id"] for c in users.a.get("/conversations").json()}
    assert users.a.get("/api-keys").json()[0]["last_used_at"] is not None


def test_a_revoked_key_is_refused_on_the_next_request(users):
    created = create_key(users.a)
    with_key = users.bearer(created["key"])
    assert with_key.get("/documents").status_code == 200
    assert users.a.delete(f"/api-keys/{created['id']}").status_code == 204
    response = with_key.get("/documents")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert users.a.get("/api-keys").json() == []
    assert users.a.delete(f"/api-keys/{created['id']}").status_code == 404


def test_an_unknown_or_expired_key_is_a_401(users, db):
    assert users.bearer("pgr_" + "x" * 43).get("/documents").status_code == 401
    created = create_key(users.a, expires_in_days=1)
    with_key = users.bearer(created["key"])
    assert with_key.get("/documents").status_code == 200
    db.execute(
        "update api_keys set created_at = now() - interval '3 days', "
        "expires_at = now() - interval '1 second' where id = %s",
        (created["id"],),
    )
    assert with_key.get("/documents").status_code == 401


def test_another_user_never_sees_or_revokes_a_key(users, db):
    created = create_key(users.a)
    assert users.b.get("/api-keys").json() == []
    assert users.b.delete(f"/api-keys/{created['id']}").status_code == 404
    assert users.a.get("/api-keys").json()[0]["id"] == created["id"]  # still there
    with acting_as(db, user_identity(B)) as conn:
        assert conn.execute("select count(*) from api_keys").fetchone() == (0,)
    with acting_as(db, user_identity(A)) as conn:
        assert conn.execute("select name from api_keys").fetchall() == [("Open WebUI",)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege), acting_as(db, user_identity(A)) as conn:
        conn.execute("select key_hash from api_keys")  # not even its owner reads the hash
    with pytest.raises(psycopg.errors.InsufficientPrivilege), acting_as(db, user_identity(B)) as conn:
        conn.execute("select * from api_key_owner('\\x00'::bytea)")  # the lookup is the backend's


def test_keys_are_made_by_a_signed_in_user_only(users):
    key = create_key(users.a)["key"]
    response = users.bearer(key).post("/api-keys", json={"name": "another"})
    assert response.status_code == 403
    assert "signed-in session" in response.json()["detail"]
    assert users.service.post("/api-keys", json={"name": "svc"}).status_code == 403
    assert users.anonymous.post("/api-keys", json={"name": "anon"}).status_code == 401


@pytest.mark.parametrize(
    "body",
    [{"name": ""}, {"name": "x" * 101}, {"name": "k", "expires_in_days": 0}, {}, {"name": "k", "extra": 1}],
)
def test_bad_key_requests_are_422(users, body):
    response = users.a.post("/api-keys", json=body)
    assert response.status_code == 422, response.text
    assert users.a.get("/api-keys").json() == []


def test_a_user_holds_at_most_fifty_keys(users):
    for i in range(50):
        create_key(users.a, name=f"k{i}")
    response = users.a.post("/api-keys", json={"name": "one too many"})
    assert response.status_code == 422
    assert "at most 50" in response.json()["detail"]
    assert len(users.a.get("/api-keys").json()) == 50


def test_keys_work_without_sign_in_mode_too(client):
    """AUTH_MODE=none: keys belong to the local user; a wrong key is still refused, not ignored."""
    created = create_key(client)
    client.headers["Authorization"] = f"Bearer {created['key']}"
    assert client.get("/documents").status_code == 200
    client.headers["Authorization"] = "Bearer pgr_wrong"
    assert client.get("/documents").status_code == 401
