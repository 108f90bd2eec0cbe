"""Start-up and failure paths of the server: migrations on or off, no blocking on the event loop,
timeouts reported as timeouts, every CLI command registered."""

from __future__ import annotations

import threading

import psycopg
import pytest
from fastapi.testclient import TestClient

from backend import composition
from backend.api.app import create_app
from backend.db import migrations
from backend.errors import ConfigurationError
from backend.testing import HashingEmbedder


def test_an_external_database_behind_the_code_is_refused_with_what_to_run(fresh_database, settings):
    url = fresh_database()
    external = settings.model_copy(update={"database_url": url})
    assert not external.resolved_auto_migrate
    with pytest.raises(ConfigurationError, match=r"db upgrade.*AUTO_MIGRATE"):
        composition.build_services(external, embedder=HashingEmbedder())
    assert migrations.current_revision(url) is None  # nothing was applied behind the deployer's back


def test_auto_migrate_applies_pending_migrations_when_asked(fresh_database, settings):
    url = fresh_database()
    services = composition.build_services(
        settings.model_copy(update={"database_url": url, "auto_migrate": True}), embedder=HashingEmbedder()
    )
    services.close()
    assert migrations.current_revision(url) == migrations.head_revision()


def test_the_embedded_database_migrates_by_default(settings):
    assert settings.uses_embedded_db
    assert settings.resolved_auto_migrate


def test_services_are_built_off_the_event_loop(monkeypatch, make_services):
    built_on: list[threading.Thread] = []
    ready = make_services()

    def build(settings):
        built_on.append(threading.current_thread())
        return ready

    monkeypatch.setattr("backend.api.app.build_services", build)
    with TestClient(create_app(settings=ready.settings)) as client:
        assert client.get("/health").json() == {"status": "ok"}
        assert client.portal is not None
        loop_thread = client.portal.call(threading.current_thread)
    assert built_on
    assert built_on[0] is not loop_thread


def test_a_statement_timeout_is_a_504_that_says_so(client, services, monkeypatch):
    def slow(conn, **kwargs):
        conn.execute("set local statement_timeout = 10")
        conn.execute("select pg_sleep(1)")

    monkeypatch.setattr("backend.db.repositories.retrieval.hybrid_search", slow)
    response = client.post("/search", json={"query": "袋鼠"})
    assert response.status_code == 504
    assert response.json()["error"] == "DatabaseTimeout"
    assert "DB_STATEMENT_TIMEOUT_MS" in response.json()["detail"]


def test_an_unreachable_database_is_a_503(client, monkeypatch):
    def down(conn, **kwargs):
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr("backend.db.repositories.retrieval.hybrid_search", down)
    response = client.post("/search", json={"query": "袋鼠"})
    assert response.status_code == 503
    assert response.json()["detail"] == "the database is unavailable; try again shortly"


def test_every_command_module_registers_its_commands():
    from backend.cli import build_parser

    usage = build_parser().format_help()
    for command in ("db", "ingest", "search", "ask", "serve", "demo", "reembed", "calibrate"):
        assert command in usage


def test_searches_read_from_database_read_url_and_writes_go_to_database_url(fresh_database, settings):
    """A stand-in replica (another database) proves the routing: what /search finds comes from the
    read URL, what /documents writes lands in the primary."""
    from backend.api.app import create_app

    primary, replica = fresh_database(), fresh_database()
    for url in (primary, replica):
        migrations.upgrade(url)
    on_replica = settings.model_copy(update={"database_url": replica, "auto_migrate": False})
    with TestClient(
        create_app(services=composition.build_services(on_replica, embedder=HashingEmbedder()))
    ) as c:
        c.post("/documents", json={"title": "副本", "content": "只在副本库里的考拉文档。"})
    services = composition.build_services(
        settings.model_copy(update={"database_url": primary, "database_read_url": replica}),
        embedder=HashingEmbedder(),
        migrate=False,
    )
    with TestClient(create_app(services=services)) as client:
        client.post("/documents", json={"title": "主库", "content": "只在主库里的袋鼠文档。"})
        titles = {h["title"] for h in client.post("/search", json={"query": "考拉 袋鼠"}).json()["results"]}
        assert titles == {"副本"}
        assert [d["title"] for d in client.get("/documents").json()["items"]] == ["主库"]
