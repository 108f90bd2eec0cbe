"""Bulk ingestion (`ingest --bulk`): one transaction, indexes rebuilt at the end, rollback on failure."""

from __future__ import annotations

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.cli import main
from backend.errors import ProviderError
from backend.ingest.documents import LoadedDocument
from backend.retrieval.params import Mode
from backend.search.types import SearchRequest
from backend.testing import FailingEmbedder, HashingEmbedder
from tests.factories import loaded_document

ANIMALS = {
    "kangaroo": ("尤金袋鼠", "尤金袋鼠分布在澳洲南部岛屿及西岸地区，以草为食。"),
    "koala": ("考拉", "考拉生活在澳洲东部的桉树林里，几乎只吃桉树叶。"),
    "panda": ("大熊猫", "大熊猫生活在中国四川的竹林中，主要吃竹子。"),
    "penguin": ("帝企鹅", "帝企鹅在南极的冰面上繁殖，雄企鹅负责孵蛋。"),
}
LONG = "".join(f"第{i}段讲的是鸭嘴兽的第{i}个习性，它们在溪流边挖洞。" for i in range(40))


def doc(external_id: str, title: str, content: str) -> LoadedDocument:
    return loaded_document(external_id, content, title)


def corpus() -> list[LoadedDocument]:
    return [doc(k, title, text) for k, (title, text) in ANIMALS.items()] + [doc("platypus", "鸭嘴兽", LONG)]


def snapshot(db) -> list[tuple]:
    return db.execute(
        "select d.external_id, d.content_hash, c.position, c.content, c.embedding_model "
        "from documents d join chunks c on c.document_id = d.id order by 1, 3"
    ).fetchall()


def chunk_indexes(db) -> dict[str, tuple[int, str]]:
    """{index name: (oid, definition)} of public.chunks."""
    rows = db.execute(
        "select indexname, (quote_ident(schemaname) || '.' || quote_ident(indexname))::regclass::oid, "
        "indexdef from pg_indexes where schemaname = 'public' and tablename = 'chunks'"
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def term_stats_drift(db) -> int:
    """Lexemes whose stored document frequency differs from a recount (0: term statistics are exact).

    Summed over the visibility scopes (migration 018): the recount is corpus-wide."""
    row = db.execute(
        """
        with stored as (select lexeme, sum(ndoc) as ndoc from term_stats group by lexeme)
        select count(*) from (
            (select lexeme, ndoc from stored except select word, ndoc from ts_stat('select fts from chunks'))
            union all
            (select word, ndoc from ts_stat('select fts from chunks') except select lexeme, ndoc from stored)
        ) diff
        """
    ).fetchone()
    corpus_rows = db.execute(
        "select (select coalesce(sum(nchunks), 0) from corpus_stats) - (select count(*) from chunks)"
    ).fetchone()
    return row[0] + abs(corpus_rows[0] or 0)


def top_external_id(services, query: str, mode: Mode = "hybrid") -> str:
    return (
        services.retrieval.search(SearchRequest(query=query, mode=mode), identity=LOCAL_IDENTITY)
        .results[0]
        .external_id
    )


def test_bulk_load_stores_every_chunk_and_leaves_the_same_indexes_and_working_search(make_services, db):
    services = make_services(ingest_embed_batch_size=2)  # several groups in the one transaction
    services.ingestion.ingest([doc("old", "旧文档", "这是一篇早已入库的文档，讲的是企鹅。")], identity=None)
    indexes = chunk_indexes(db)
    assert any("hnsw" in definition for _, definition in indexes.values())

    summary = services.ingestion.ingest(corpus(), bulk=True, identity=None)

    assert summary.counts == {"created": 5, "updated": 0, "unchanged": 0, "failed": 0}
    stored = db.execute("select count(*) from chunks").fetchone()[0]
    assert stored == sum(o.chunks for o in summary.outcomes) + 1
    assert summary.bulk is not None
    assert "chunks_embedding_384_hnsw_idx" in summary.bulk.deferred_indexes
    after = chunk_indexes(db)
    assert {name: d for name, (_, d) in after.items()} == {name: d for name, (_, d) in indexes.items()}
    assert term_stats_drift(db) == 0
    assert top_external_id(services, "尤金袋鼠分布在哪些地区？") == "kangaroo"
    assert top_external_id(services, "大熊猫生活在中国四川的竹林中", mode="vector") == "panda"
    assert top_external_id(services, "考拉 桉树叶", mode="fulltext") == "koala"
    # The term-statistics triggers are back: an ordinary ingest afterwards keeps the counts exact.
    services.ingestion.ingest([doc("seal", "海豹", "海豹在冰冷的海水里捕鱼。")], identity=None)
    assert term_stats_drift(db) == 0


def test_bulk_rerun_is_idempotent_and_rebuilds_nothing_when_nothing_changed(make_services, db):
    services = make_services()
    services.ingestion.ingest(corpus(), bulk=True, identity=None)
    before, indexes = snapshot(db), chunk_indexes(db)

    again = services.ingestion.ingest(corpus(), bulk=True, identity=None)

    assert again.counts == {"created": 0, "updated": 0, "unchanged": 5, "failed": 0}
    assert again.bulk is None
    assert snapshot(db) == before
    assert chunk_indexes(db) == indexes  # same index objects: nothing was dropped or rebuilt


def test_bulk_update_replaces_only_the_changed_documents(make_services, db):
    services = make_services()
    services.ingestion.ingest(corpus(), bulk=True, identity=None)
    edited = [*corpus()[:-1], doc("platypus", "鸭嘴兽", LONG.replace("第39段", "最后一段"))]

    summary = services.ingestion.ingest(edited, bulk=True, identity=None)

    assert summary.counts == {"created": 0, "updated": 1, "unchanged": 4, "failed": 0}
    contents = "".join(r[0] for r in db.execute("select content from chunks order by document_id, position"))
    assert "最后一段" in contents
    assert "第39段" not in contents
    assert db.execute("select count(*) from documents").fetchone()[0] == 5
    assert term_stats_drift(db) == 0
    assert top_external_id(services, "鸭嘴兽在哪里挖洞") == "platypus"


def test_failure_mid_bulk_load_leaves_the_previous_data_and_indexes(make_services, db):
    make_services().ingestion.ingest(corpus(), identity=None)
    before, indexes = snapshot(db), chunk_indexes(db)
    stats = db.execute("select lexeme, ndoc from term_stats order by lexeme").fetchall()
    failing = make_services(
        embedder=FailingEmbedder(HashingEmbedder(), fail_on_call=2), ingest_embed_batch_size=1
    )
    changed = [doc(k, title, text + "（修订版）") for k, (title, text) in ANIMALS.items()]
    written_before_failure: list[int] = []

    with pytest.raises(ProviderError, match="rolled back"):
        failing.ingestion.ingest(
            changed,
            bulk=True,
            on_progress=lambda summary, _: written_before_failure.append(summary.count("updated")),
            identity=None,
        )

    assert written_before_failure == [1]  # the first document was written, with the indexes dropped
    assert snapshot(db) == before
    assert chunk_indexes(db) == indexes
    assert db.execute("select lexeme, ndoc from term_stats order by lexeme").fetchall() == stats
    services = make_services()
    assert top_external_id(services, "尤金袋鼠分布在哪些地区？") == "kangaroo"
    services.ingestion.ingest([doc("seal", "海豹", "海豹在冰冷的海水里捕鱼。")], identity=None)
    assert term_stats_drift(db) == 0  # the term-statistics triggers were never left paused


def test_bulk_load_reports_bad_documents_and_stores_the_rest(make_services, db):
    summary = make_services().ingestion.ingest(
        [*corpus(), doc("empty", "空", "   ")], bulk=True, identity=None
    )

    assert summary.counts == {"created": 5, "updated": 0, "unchanged": 0, "failed": 1}
    assert summary.failures[0].external_id == "empty"
    assert db.execute("select count(*) from documents").fetchone()[0] == 5


def test_cli_help_says_bulk_mode_blocks_searches(capsys):
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "ACCESS EXCLUSIVE lock" in text
    assert "searches and other ingests wait" in text


@pytest.mark.slow
def test_cli_bulk_ingest_then_search(monkeypatch, database_url, db, tmp_path, capsys):
    from backend.config import get_settings

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("EMBEDDING_PROVIDER", "local")
    monkeypatch.setenv("LLM_PROVIDER", "extractive")
    get_settings.cache_clear()
    for key, (title, text) in ANIMALS.items():
        (tmp_path / f"{key}.md").write_text(f"# {title}\n\n{text}", encoding="utf-8")
    try:
        assert main(["ingest", str(tmp_path), "--bulk", "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "4 created, 0 updated, 0 unchanged, 0 failed" in out
        assert "bulk: rebuilt" in out
        assert main(["search", "尤金袋鼠分布在哪些地区？", "--json", "--top-k", "1"]) == 0
        assert '"title": "尤金袋鼠"' in capsys.readouterr().out
        assert main(["ingest", str(tmp_path), "--bulk", "--no-progress"]) == 0
        assert "0 created, 0 updated, 4 unchanged, 0 failed" in capsys.readouterr().out
    finally:
        get_settings.cache_clear()
