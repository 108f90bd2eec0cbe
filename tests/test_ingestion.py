"""Ingestion: idempotent, atomic, cached embeddings, whitelisted metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.errors import InvalidInput, ProviderError
from backend.ingest.documents import LoadedDocument
from backend.ingest.loaders import load_path
from backend.testing import FailingEmbedder, HashingEmbedder
from tests.factories import loaded_document

CMRC = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "cmrc2018-dev" / "corpus.jsonl"


doc = loaded_document


def snapshot(db) -> list[tuple]:
    return db.execute(
        "select d.external_id, d.content_hash, c.position, c.content, c.embedding_model "
        "from documents d join chunks c on c.document_id = d.id order by 1, 3"
    ).fetchall()


LONG = "".join(f"第{i}段讲的是袋鼠的第{i}个习性，它们生活在澳洲的南部岛屿。" for i in range(60))


def test_reingesting_unchanged_documents_is_a_noop(services, db):
    docs = [doc("a", "袋鼠生活在澳洲。"), doc("b", LONG)]
    first = services.ingestion.ingest(docs, identity=None)
    assert first.counts == {"created": 2, "updated": 0, "unchanged": 0, "failed": 0}
    before = snapshot(db)
    second = services.ingestion.ingest(docs, identity=None)
    assert second.counts == {"created": 0, "updated": 0, "unchanged": 2, "failed": 0}
    assert second.chunks_embedded == 0
    assert snapshot(db) == before


def test_changed_document_replaces_its_chunks_and_reuses_cached_embeddings(services, db):
    services.ingestion.ingest([doc("b", LONG)], identity=None)
    n_chunks = db.execute("select count(*) from chunks").fetchone()[0]
    assert n_chunks > 3
    edited = LONG.replace("第59段", "最后一段")
    result = services.ingestion.ingest([doc("b", edited)], identity=None)
    assert result.counts["updated"] == 1
    # Only the chunk(s) whose text changed are embedded again; the rest come from the cache.
    assert 1 <= result.chunks_embedded <= 2
    assert result.chunks_from_cache >= n_chunks - 2
    contents = "".join(r[0] for r in db.execute("select content from chunks order by position"))
    assert "最后一段" in contents
    assert "第59段" not in contents
    assert db.execute("select count(*) from documents").fetchone()[0] == 1


def test_provider_failing_on_the_third_batch_leaves_the_database_as_it_was(make_services, db):
    services = make_services()
    services.ingestion.ingest([doc("b", LONG), doc("c", "旧内容")], identity=None)
    before = snapshot(db)
    failing = make_services(
        embedder=FailingEmbedder(HashingEmbedder(), fail_on_call=3), ingest_embed_batch_size=2
    )
    changed = [doc("b", LONG.replace("袋鼠", "考拉")), doc("c", "新内容"), doc("d", "全新的文档")]
    with pytest.raises(ProviderError):
        failing.ingestion.ingest(changed, atomic=True, identity=None)
    assert snapshot(db) == before
    # The bulk path reports the failure per document instead of raising, and still writes nothing.
    # (A different edit: the chunks embedded before the failure above are cached and would not fail.)
    failing2 = make_services(
        embedder=FailingEmbedder(HashingEmbedder(), fail_on_call=3), ingest_embed_batch_size=1
    )
    summary = failing2.ingestion.ingest([doc("b", LONG.replace("袋鼠", "树袋熊"))], identity=None)
    assert summary.counts["failed"] == 1
    assert "embedding provider failed" in summary.failures[0].error
    assert snapshot(db) == before


def test_metadata_outside_the_whitelist_is_refused_with_a_clear_error(services, db):
    with pytest.raises(InvalidInput, match="secret_key"):
        services.ingestion.ingest([doc("x", "内容", secret_key="v")], atomic=True, identity=None)
    summary = services.ingestion.ingest(
        [doc("x", "内容", secret_key="v"), doc("y", "别的内容")], identity=None
    )
    assert summary.counts == {"created": 1, "updated": 0, "unchanged": 0, "failed": 1}
    assert db.execute("select external_id from documents").fetchall() == [("y",)]


def test_chunks_carry_tokens_heading_path_model_and_filterable_metadata(services, db):
    services.ingestion.ingest(
        [doc("m", "# 动物\n\n## 袋鼠\n\n尤金袋鼠分布在澳洲南部岛屿。", title="动物手册", tags=["动物"])],
        identity=None,
    )
    row = db.execute("select heading_path, content_tokens, embedding_model, metadata from chunks").fetchone()
    heading_path, tokens, model, meta = row
    assert heading_path == ["动物", "袋鼠"]
    assert "袋鼠" in tokens.split()
    assert "尤金" in tokens.split()
    assert model == "hashing-test@384"
    assert meta["lang"] == "zh"
    assert meta["tags"] == ["动物"]
    assert meta["doc_id"] == "m"
    assert {"text_len", "too_short", "quality_score", "keyphrases"} <= set(meta)


def test_document_without_external_id_is_identified_by_its_content(services, db):
    anonymous = LoadedDocument(
        title="t", content="同样的内容", source="api", filename=None, content_type="text/plain"
    )
    services.ingestion.ingest([anonymous], identity=None)
    again = services.ingestion.ingest([anonymous], identity=None)
    assert again.counts["unchanged"] == 1
    assert db.execute("select count(*) from documents").fetchone()[0] == 1


@pytest.mark.skipif(not CMRC.exists(), reason="development dataset not present")
def test_ingesting_cmrc2018_twice_creates_each_document_once_then_reports_all_unchanged(services, db):
    first = services.ingestion.ingest(load_path(CMRC), identity=None)
    assert first.counts["created"] == 256
    assert first.counts["failed"] == 0
    second = services.ingestion.ingest(load_path(CMRC), identity=None)
    assert second.counts == {"created": 0, "updated": 0, "unchanged": 256, "failed": 0}
    assert db.execute("select count(*) from documents").fetchone()[0] == 256


def test_reembed_moves_the_corpus_to_the_new_model_and_search_works_again(make_services, db):
    from backend.documents.reembed import reembed
    from backend.errors import EmbeddingModelMismatch
    from backend.search.types import SearchRequest

    old = make_services()
    old.ingestion.ingest([doc("a", "袋鼠生活在澳洲。"), doc("b", LONG)], identity=None)
    new = make_services(embedder=HashingEmbedder(dims=768))
    with pytest.raises(EmbeddingModelMismatch, match="re-embed"):
        new.retrieval.search(SearchRequest(query="袋鼠"), identity=LOCAL_IDENTITY)
    summary = reembed(new.pool, new.embedder, batch_size=3)
    total = db.execute("select count(*) from chunks").fetchone()[0]
    assert summary.chunks == total
    assert summary.embedded == total
    assert db.execute("select distinct embedding_model, embedding_dims from chunks").fetchall() == [
        ("hashing-test@768", 768)
    ]
    assert (
        new.retrieval.search(SearchRequest(query="袋鼠生活在澳洲"), identity=LOCAL_IDENTITY)
        .results[0]
        .external_id
        == "a"
    )
    # Switching back costs no provider call: the old model's vectors are still cached.
    back = reembed(old.pool, old.embedder, batch_size=3)
    assert back.chunks == total
    assert back.embedded == 0
