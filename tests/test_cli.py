"""The command line, end to end with the bundled local embedding model (a few short chunks)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backend.cli import main
from backend.config import get_settings
from backend.db import migrations

pytestmark = pytest.mark.slow


@pytest.fixture
def cli_env(monkeypatch, database_url, db):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("LLM_PROVIDER", "extractive")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kangaroo.md").write_text(
        "# 尤金袋鼠\n\n尤金袋鼠分布在澳洲南部岛屿及西岸地区。", encoding="utf-8"
    )
    (docs / "panthers.txt").write_text("The Panthers defense gave up just 308 points.", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    return docs


def test_ingest_reports_created_then_unchanged_and_lists_failures(cli_env, folder, capsys):
    assert main(["ingest", str(folder), "--no-progress"]) == 1  # one file failed
    out = capsys.readouterr().out
    assert "2 created, 0 updated, 0 unchanged, 1 failed" in out
    assert "broken.pdf" in out
    assert main(["ingest", str(folder / "kangaroo.md"), str(folder / "panthers.txt"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "0 created, 0 updated, 2 unchanged, 0 failed" in out


def test_search_json_and_ask_with_citations(cli_env, folder, capsys):
    main(["ingest", str(folder), "--no-progress"])
    capsys.readouterr()
    assert main(["search", "尤金袋鼠分布在哪些地区？", "--json", "--top-k", "2", "--no-dynamic"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["results"][0]["title"] == "尤金袋鼠"
    assert len(payload["results"]) == 2
    assert payload["diagnostics"]["embedding_model"] == "multilingual-e5-small@384"
    assert main(["ask", "尤金袋鼠分布在哪些地区？"]) == 0
    out = capsys.readouterr().out
    assert "尤金袋鼠分布在澳洲南部岛屿及西岸地区。[1]" in out
    assert "generator: extractive" in out


def test_bad_invocations_give_a_message_and_nonzero_exit(cli_env, tmp_path, capsys):
    assert main(["ingest"]) == 2
    assert "nothing to ingest" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "missing.md"), "--no-progress"]) == 1
    assert "no such file or folder" in capsys.readouterr().out
    assert main(["search", "   "]) == 2
    assert "query is empty" in capsys.readouterr().err
    assert main(["db", "status"]) == 0
    assert f"schema: at {migrations.head_revision()}" in capsys.readouterr().out


def test_the_same_files_by_absolute_and_relative_path_are_unchanged(cli_env, folder, capsys, monkeypatch):
    monkeypatch.chdir(folder.parent)
    assert main(["ingest", str(folder.resolve() / "kangaroo.md"), "--no-progress"]) == 0  # as `demo` does
    capsys.readouterr()
    assert main(["ingest", "docs/kangaroo.md", "--no-progress"]) == 0
    assert "0 created, 0 updated, 1 unchanged" in capsys.readouterr().out


def test_files_holding_unstorable_text_fail_with_a_message_and_a_nonzero_exit(cli_env, tmp_path, capsys):
    """As the API: a NUL in a text file refuses it (past the first 8 KB it was silently dropped), and a
    file name that is not UTF-8 is a failure, not a crash at the database write."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kangaroo.md").write_text("# 尤金袋鼠\n\n尤金袋鼠分布在澳洲南部岛屿。", encoding="utf-8")
    (docs / "late_nul.txt").write_bytes(b"log line\n" * 1000 + b"\x00tail")
    Path(os.fsdecode(bytes(docs) + b"/bad\xffname.txt")).write_bytes(b"some text")
    assert main(["ingest", str(docs), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "1 created, 0 updated, 0 unchanged, 2 failed" in out
    assert "late_nul.txt: binary file (a NUL character at character 9000" in out
    assert "bad\\udcffname.txt: the file name is not valid UTF-8 (rename the file)" in out
