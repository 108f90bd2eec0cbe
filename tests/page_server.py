"""A real API server for the browser tests: uvicorn on a free port in 8300-8399, in a thread of the
test process, over a scratch database holding the demo corpus (embedded by the local model)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

from backend.api.app import create_app
from backend.cli.ingest_commands import iter_inputs
from backend.cli.server_commands import DEMO_CORPUS
from backend.composition import Services, build_services
from backend.config import Settings
from tests.factories import loaded_document

PORTS = range(8300, 8400)  # this worktree's range (the team brief): never 8000
START_TIMEOUT_S = 30


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail(f"no free port in {PORTS.start}-{PORTS.stop - 1}", pytrace=False)


def demo_settings(**overrides: Any) -> Settings:
    """What `make run` serves, minus the developer's .env: local embeddings, extractive answers."""
    values: dict[str, Any] = {
        "embedding_provider": "local",
        "llm_provider": "extractive",
        "log_level": "WARNING",
    }
    return Settings(_env_file=None, **{**values, **overrides})


def load_demo_corpus(services: Services) -> None:
    summary = services.ingestion.ingest(iter_inputs([DEMO_CORPUS]), identity=None)
    assert summary.counts.get("failed", 0) == 0, summary


def ingest_public(services: Services, *, external_id: str, title: str, content: str) -> None:
    """Create or replace a public document (as `ingest` on the command line does)."""
    summary = services.ingestion.ingest([loaded_document(external_id, content, title)], identity=None)
    assert summary.counts.get("failed", 0) == 0, summary


@contextmanager
def running_api(services: Services) -> Iterator[str]:
    """Serve create_app(services) until the block ends; yields the base URL."""
    port = free_port()
    config = uvicorn.Config(create_app(services=services), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"api-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail(f"the API server did not start on port {port}", pytrace=False)
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def demo_api(database_url: str, **overrides: Any) -> Iterator[tuple[str, Services]]:
    """Services over `database_url` (migrated) with `overrides`, served; yields (base URL, services)."""
    services = build_services(demo_settings(**overrides), database_url=database_url, migrate=False)
    try:
        with running_api(services) as url:
            yield url, services
    finally:
        services.close()
