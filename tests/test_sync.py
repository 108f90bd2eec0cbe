"""`python -m backend sync` (issue 29, item 4): the shared corpus made to match a folder or a URL list -
a dry run changes nothing, new and edited files are ingested, unchanged ones skipped, vanished ones
removed only with --delete (exactly those), a rerun is a no-op, an interrupted run is continued."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backend.cli import main
from backend.config import get_settings
from backend.documents.sync import sync
from backend.documents.sync_sources import Unreadable, folder_items, url_items
from backend.ingest.sandbox import DEFAULT_LIMITS
from tests.fake_http import serve


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "team"
    (docs / "sub").mkdir(parents=True)
    (docs / "kangaroo.md").write_text("# 袋鼠\n\n袋鼠生活在澳大利亚。", encoding="utf-8")
    (docs / "koala.md").write_text("# 考拉\n\n考拉吃桉树叶。", encoding="utf-8")
    (docs / "sub" / "platypus.txt").write_text("The platypus lays eggs.", encoding="utf-8")
    (docs / ".hidden.md").write_text("# hidden\n\nnot synced", encoding="utf-8")
    return docs


def run_sync(services, folder: Path, *, delete: bool = False, apply: bool = True, prefix: str = "team/"):
    return sync(
        services.ingestion,
        services.db,
        folder_items(folder, prefix, DEFAULT_LIMITS),
        prefix=prefix,
        identity=None,
        delete=delete,
        apply=apply,
    )


def stored(db) -> dict[str, str]:
    return dict(db.execute("select external_id, content_hash from documents order by 1").fetchall())


def test_a_dry_run_shows_what_would_change_and_writes_nothing(services, folder, db):
    report = run_sync(services, folder, apply=False, delete=True)
    assert report.added == ["team/kangaroo.md", "team/koala.md", "team/sub/platypus.txt"]
    assert stored(db) == {}
    assert db.execute("select count(*) from embedding_cache").fetchone()[0] == 0


def test_sync_adds_updates_skips_and_removes_exactly_the_vanished_files(services, folder, db):
    first = run_sync(services, folder)
    assert len(first.added) == 3
    services.ingestion.ingest(  # a document of the corpus that is not the folder's
        folder_items(folder / "sub", "elsewhere/", DEFAULT_LIMITS), identity=None
    )
    before = stored(db)

    (folder / "koala.md").write_text("# 考拉\n\n考拉每天睡二十个小时。", encoding="utf-8")
    (folder / "kangaroo.md").unlink()
    (folder / "wombat.md").write_text("# 袋熊\n\n袋熊的粪便是方形的。", encoding="utf-8")

    dry = run_sync(services, folder, delete=True, apply=False)
    assert (dry.added, dry.updated, dry.removed) == (
        ["team/wombat.md"],
        ["team/koala.md"],
        ["team/kangaroo.md"],
    )
    assert dry.unchanged == ["team/sub/platypus.txt"]
    assert stored(db) == before  # the dry run changed nothing

    kept = run_sync(services, folder, delete=False)
    assert kept.vanished_kept == ["team/kangaroo.md"]
    assert "team/kangaroo.md" in stored(db)  # without --delete a vanished file stays

    report = run_sync(services, folder, delete=True)
    assert report.removed == ["team/kangaroo.md"]
    after = stored(db)
    assert sorted(after) == [
        "elsewhere/platypus.txt",
        "team/koala.md",
        "team/sub/platypus.txt",
        "team/wombat.md",
    ]
    assert after["team/koala.md"] != before["team/koala.md"]
    assert (
        db.execute(
            "select count(*) from chunks where document_id not in (select id from documents)"
        ).fetchone()[0]
        == 0
    )

    again = run_sync(services, folder, delete=True)  # a rerun is a no-op
    assert (again.added, again.updated, again.removed, again.failed) == ([], [], [], [])
    assert len(again.unchanged) == 3
    assert stored(db) == after


def test_an_unreadable_file_is_reported_and_its_stored_version_kept(services, folder, db):
    run_sync(services, folder)
    (folder / "koala.md").write_bytes(b"\xff\xfe\x00\x00garbage\x00\x00\x00")
    report = run_sync(services, folder, delete=True)
    assert report.failed == [
        ("team/koala.md", "cannot decode as text (tried utf-8, gb18030, big5 and charset detection)")
    ]
    assert report.removed == []
    assert "team/koala.md" in stored(db)


def test_an_interrupted_sync_continues_where_it_stopped(make_services, folder, db):
    services = make_services(ingest_embed_batch_size=1)  # one document per transaction
    seen = []

    def stop_after_the_first_group(summary, chunks):
        seen.append(chunks)
        if len(seen) == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync(
            services.ingestion,
            services.db,
            folder_items(folder, "team/", DEFAULT_LIMITS),
            prefix="team/",
            identity=None,
            delete=True,
            apply=True,
            on_progress=stop_after_the_first_group,
        )
    assert list(stored(db)) == ["team/kangaroo.md"]  # whole documents only
    report = run_sync(services, folder, delete=True)
    assert report.unchanged == ["team/kangaroo.md"]
    assert report.added == ["team/koala.md", "team/sub/platypus.txt"]


PAGES = {
    "/a": (
        "text/html",
        "<html><head><title>袋鼠</title></head><body><p>袋鼠生活在澳大利亚南部。</p></body></html>",
    ),
    "/b": ("text/plain", "Koalas eat eucalyptus leaves."),
    "/missing": None,
}


def respond(path, headers, body):
    page = PAGES.get(path)
    if page is None:
        return 404, b"not found", "text/plain"
    return 200, page[1].encode(), f"{page[0]}; charset=utf-8"


def test_sync_urls_reads_pages_with_the_web_readers_guard(services, settings, db):
    guarded = type(settings).model_validate({**settings.model_dump(), "web_allow_private_addresses": False})
    with serve(respond) as base:
        refused = asyncio.run(url_items([f"{base}/a"], "web/", guarded))
        assert isinstance(refused[0], Unreadable)
        assert refused[0].reason == "UnsafeURL: refusing to fetch a private or reserved address: 127.0.0.1"
        # a loaded machine may take seconds to start the parse sandbox: no page time limit is tested here
        allowed = type(settings).model_validate(
            {**settings.model_dump(), "web_allow_private_addresses": True, "web_deep_read_timeout_s": 60}
        )
        items = asyncio.run(url_items([f"{base}/a", f"{base}/b", f"{base}/missing"], "web/", allowed))
    report = sync(
        services.ingestion, services.db, items, prefix="web/", identity=None, delete=True, apply=True
    )
    assert report.added == [f"web/{base}/a", f"web/{base}/b"], report.failed
    assert [(ident, reason) for ident, reason in report.failed] == [
        (f"web/{base}/missing", "PageFetchError: HTTP 404")
    ]
    titles = dict(db.execute("select external_id, title from documents").fetchall())
    assert titles[f"web/{base}/a"] == "袋鼠"


@pytest.fixture
def cli_env(monkeypatch, database_url, db):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("LLM_PROVIDER", "extractive")
    monkeypatch.setenv("WEB_ALLOW_PRIVATE_ADDRESSES", "true")  # the page server is on 127.0.0.1
    monkeypatch.setenv("WEB_DEEP_READ_TIMEOUT_S", "60")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.slow
def test_the_sync_command_dry_runs_then_applies_a_folder_and_a_url_list(
    cli_env, folder, tmp_path, capsys, db, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(["sync", "team", "--delete"]) == 0
    out = capsys.readouterr().out
    assert "would be added: team/kangaroo.md" in out
    assert "would be added 3, would be updated 0, skipped 0 unchanged, would be removed 0, failed 0" in out
    assert stored(db) == {}
    assert main(["ingest", "team", "--no-progress"]) == 0  # the names `ingest` gives are the same
    capsys.readouterr()
    assert main(["sync", str(folder), "--apply", "--no-progress"]) == 0
    assert "added 0, updated 0, skipped 3 unchanged" in capsys.readouterr().out
    (folder / "koala.md").unlink()
    assert main(["sync", "team/", "--delete", "--apply", "--no-progress"]) == 0
    assert "removed: team/koala.md" in capsys.readouterr().out
    assert sorted(stored(db)) == ["team/kangaroo.md", "team/sub/platypus.txt"]

    with serve(respond) as base:
        urls = tmp_path / "news.txt"
        urls.write_text(f"# team pages\n{base}/a\n\n{base}/missing\n", encoding="utf-8")
        assert main(["sync", "--urls", str(urls), "--apply", "--no-progress"]) == 1  # one page failed
    out = capsys.readouterr().out
    assert f"added: news/{base}/a" in out
    assert f"failed: news/{base}/missing: PageFetchError: HTTP 404" in out
    assert main(["sync"]) == 2
    assert "give a folder or --urls FILE" in capsys.readouterr().err
