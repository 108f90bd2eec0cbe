"""The embedded server's memory and parallel settings, sized from the machine and overridable."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from backend.config import Settings
from backend.db import migrations
from backend.db.connection import connect
from backend.db.embedded import start_embedded_server, stop_embedded_server
from backend.db.repositories.prewarm import prewarm_hnsw
from backend.db.tuning import MB, Machine, detect_machine, embedded_settings, sized_settings
from backend.settings.database import TuningError
from tests.factories import copy_random_chunks, insert_document

GIB = 1024 * MB


def test_a_24_gb_two_core_machine_gets_a_quarter_in_shared_buffers_and_one_worker_per_gather() -> None:
    assert sized_settings(Machine(24 * GIB, 2)) == {
        "shared_buffers": "6144MB",
        "effective_cache_size": "18432MB",
        "work_mem": "61MB",  # (24 GB - 6 GB) / (100 connections × 3)
        "maintenance_work_mem": "3072MB",
        "autovacuum_work_mem": "384MB",
        "max_parallel_workers": "2",
        "max_parallel_workers_per_gather": "1",
        "max_parallel_maintenance_workers": "1",
    }


def test_a_small_machine_keeps_postgres_floors_and_a_big_one_its_caps() -> None:
    small = sized_settings(Machine(1 * GIB, 1))
    assert (small["shared_buffers"], small["work_mem"], small["max_parallel_workers_per_gather"]) == (
        "256MB",
        "4MB",
        "1",
    )
    big = sized_settings(Machine(512 * GIB, 64))
    assert (big["work_mem"], big["maintenance_work_mem"], big["max_parallel_workers_per_gather"]) == (
        "256MB",
        "4096MB",
        "32",
    )


def test_overrides_win_and_unknown_or_unsafe_ones_are_refused() -> None:
    assert sized_settings(Machine(24 * GIB, 2), {"work_mem": "16MB"})["work_mem"] == "16MB"
    with pytest.raises(TuningError, match="'fsync' is not one of"):
        sized_settings(Machine(24 * GIB, 2), {"fsync": "off"})
    with pytest.raises(TuningError, match="unsafe value"):
        sized_settings(Machine(24 * GIB, 2), {"work_mem": "1MB'\nfsync = 'off"})


def test_settings_size_for_less_than_the_machine_and_reject_a_bad_override() -> None:
    settings = Settings(
        embedded_db_memory_mb=8192, embedded_db_cpus=4, embedded_db_settings={"work_mem": "8MB"}
    )
    sized = embedded_settings(
        settings.embedded_db_memory_mb, settings.embedded_db_cpus, settings.embedded_db_settings
    )
    assert (sized["shared_buffers"], sized["max_parallel_workers"], sized["work_mem"]) == (
        "2048MB",
        "4",
        "8MB",
    )
    with pytest.raises(ValidationError, match="'max_connections' is not one of"):
        Settings(embedded_db_settings={"max_connections": "1000"})


def test_the_machine_is_read_from_meminfo_and_a_lower_cgroup_limit(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("MemTotal:       25165824 kB\nMemFree: 1 kB\n")
    (tmp_path / "memory.max").write_text(f"{4 * GIB}\n")
    assert detect_machine(tmp_path / "meminfo", tmp_path / "none").memory_bytes == 24 * GIB
    assert detect_machine(tmp_path / "meminfo", tmp_path).memory_bytes == 4 * GIB


def test_a_new_embedded_server_runs_with_the_sizing_and_alter_system_still_wins(tmp_path: Path) -> None:
    data = tmp_path / "pg"
    tuning = {"shared_buffers": "144MB", "work_mem": "12MB", "max_parallel_workers_per_gather": "1"}
    try:
        url = start_embedded_server(data, tuning)
        with psycopg.connect(url, autocommit=True) as conn:
            shown = [conn.execute(f"show {name}").fetchone() for name in tuning]  # noqa: S608 (fixed names)
            assert [r[0] if r else None for r in shown] == ["144MB", "12MB", "1"]
            conn.execute("alter system set work_mem = '20MB'")
        url = start_embedded_server(data, {**tuning, "work_mem": "14MB"})  # attach: rewrite + reload
        assert _work_mem_becomes(url, "20MB") == "20MB"  # ALTER SYSTEM over pgrag.conf
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("alter system reset work_mem")
            conn.execute("select pg_reload_conf()")
        assert _work_mem_becomes(url, "14MB") == "14MB"
    finally:
        stop_embedded_server(data)


def _work_mem_becomes(url: str, expected: str) -> str:
    """work_mem as new sessions see it, waiting up to 5 s for the reload (SIGHUP is asynchronous)."""
    shown = ""
    for _ in range(50):
        with psycopg.connect(url) as conn:
            row = conn.execute("show work_mem").fetchone()
        shown = row[0] if row else ""
        if shown == expected:
            break
        time.sleep(0.1)
    return shown


def test_prewarm_walks_every_element_of_the_hnsw_index(fresh_database) -> None:
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        doc = insert_document(conn)
        copy_random_chunks(conn, 3000, document_for=lambda i: doc, seed=11)
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        (done,) = prewarm_hnsw(conn)
    assert done["index"] == "chunks_embedding_384_hnsw_idx"
    assert done["visited"] == 3000
