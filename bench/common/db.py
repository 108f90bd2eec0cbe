"""Scratch databases on the benchmarks' own embedded PostgreSQL server (.data/bench-postgres)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from backend.db import migrations
from backend.db.embedded import start_embedded_server, stop_embedded_server
from bench.common import BENCH_SERVER_DIR, log


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def tune_bench_server(shared_buffers: str) -> str:
    """The benchmark server with this shared_buffers (ALTER SYSTEM + restart when it differs)."""
    server = start_embedded_server(BENCH_SERVER_DIR)
    with psycopg.connect(server, autocommit=True) as conn:
        current = conn.execute("select pg_size_bytes(current_setting('shared_buffers'))").fetchone()[0]
        wanted = conn.execute("select pg_size_bytes(%s)", (shared_buffers,)).fetchone()[0]
        if current == wanted:
            return server
        conn.execute(sql.SQL("alter system set shared_buffers = {}").format(sql.Literal(shared_buffers)))
    log(f"restarting the benchmark server with shared_buffers = {shared_buffers}")
    stop_embedded_server(BENCH_SERVER_DIR)
    return start_embedded_server(BENCH_SERVER_DIR)


@contextmanager
def scratch_database(label: str, *, keep: bool = False) -> Iterator[str]:
    """A fresh, migrated database on the benchmark's embedded server; dropped afterwards unless keep."""
    server = start_embedded_server(BENCH_SERVER_DIR)
    name = f"bench_{label.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        # The name is ours (letters, digits, _), never user input.
        conn.execute(f'create database "{name}"')
    url = with_database(server, name)
    try:
        migrations.upgrade(url)
        yield url
    finally:
        if keep:
            log(f"kept database {name}")
        else:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f'drop database if exists "{name}" with (force)')
