"""Term statistics stay exact across shards: per tenant and visibility scope, on the tenant's shard,
maintained by the triggers of sql/citus/ through ingestion, deletion, re-ingestion and bulk loads;
their sums over the caller's scopes are the numbers one node keeps (migration 018), which is what the
full-text leg weighs terms by."""

from __future__ import annotations

import uuid
from collections import Counter

import psycopg

from backend.auth.identity import SERVICE_IDENTITY, user_identity
from backend.documents import service as documents_service
from backend.text import query_terms
from tests.distributed.corpus import USERS, corpus
from tests.factories import loaded_document

A, B = USERS["ann"], USERS["bo"]


def recount(db: psycopg.Connection) -> tuple[Counter, Counter]:
    """(per (tenant, lexeme, scope) chunk counts, per (tenant, scope) chunk counts) from the chunks."""
    lexemes: Counter = Counter()
    chunks: Counter = Counter()
    for tenant, scope, fts_lexemes in db.execute(
        "select tenant_id, visibility_scope(visibility, owner_id), tsvector_to_array(fts) from chunks"
    ):
        chunks[(tenant, scope)] += 1
        lexemes.update((tenant, lexeme, scope) for lexeme in fts_lexemes)
    return lexemes, chunks


TERM_STATS = "select tenant_id, lexeme, scope, ndoc from term_stats"


def stored(db: psycopg.Connection) -> tuple[Counter, Counter]:
    lexemes = Counter({(r[0], r[1], r[2]): r[3] for r in db.execute(TERM_STATS)})
    chunks = Counter(
        {(r[0], r[1]): r[2] for r in db.execute("select tenant_id, scope, nchunks from corpus_stats")}
    )
    assert all(n > 0 for n in lexemes.values())  # a count that reaches zero is deleted
    assert all(n > 0 for n in chunks.values())
    return lexemes, chunks


def assert_exact(db: psycopg.Connection) -> None:
    assert stored(db) == recount(db)
    total = db.execute(
        "select coalesce(sum(nchunks), 0), coalesce(sum(total_lexemes), 0) from corpus_stats"
    ).fetchone()
    assert total == db.execute("select count(*), coalesce(sum(length(fts)), 0) from chunks").fetchone()


def test_ingestion_deletion_and_reingestion_keep_every_tenants_statistics_exact(services, db):
    for owned in corpus():
        services.ingestion.ingest(owned.documents, identity=owned.identity)
    assert len(stored(db)[1]) == 5  # the public tenant and four users
    assert_exact(db)

    first_of_a = db.execute(
        "select id from documents where owner_id = %s order by external_id limit 1", (A,)
    ).fetchone()
    documents_service.delete_document(services.db, identity=user_identity(A), document_id=first_of_a[0])
    assert_exact(db)

    changed = loaded_document("bo-0", "乌龙茶适合用九十度的水冲泡，袋鼠生活在澳洲。", "bo 的新笔记")
    assert services.ingestion.ingest([changed], identity=user_identity(B)).counts["updated"] == 1
    assert_exact(db)

    public = next(o for o in corpus() if o.owner == "public")
    rewritten = [
        loaded_document(d.external_id or "", d.content + "\n\n补充：混合检索。", d.title)
        for d in public.documents
    ]
    assert services.ingestion.ingest(rewritten, identity=None, bulk=True).counts["updated"] == len(rewritten)
    assert_exact(db)

    for document_id in [r[0] for r in db.execute("select id from documents where owner_id is null")]:
        documents_service.delete_document(services.db, identity=SERVICE_IDENTITY, document_id=document_id)
    assert_exact(db)
    assert uuid.UUID(int=0) not in {tenant for tenant, _scope in stored(db)[1]}


def test_the_full_text_leg_weighs_terms_by_the_corpus_wide_counts(services, db):
    for owned in corpus():
        services.ingestion.ingest(owned.documents, identity=owned.identity)
    lexemes, chunks = recount(db)
    corpus_wide: Counter[str] = Counter()
    for (_tenant, lexeme, _scope), n in lexemes.items():
        corpus_wide[lexeme] += n
    text = " ".join(query_terms("混合检索怎么融合两路结果 row level security"))
    terms = db.execute("select terms from hybrid_search_terms(%s)", (text,)).fetchone()[0]
    assert terms
    assert {t["lexeme"]: t["df"] for t in terms} == {t["lexeme"]: corpus_wide[t["lexeme"]] for t in terms}
    assert db.execute("select sum(nchunks) from corpus_stats").fetchone()[0] == sum(chunks.values())
    # A user's statistics are the public corpus's and their own (migration 018), on their own shards.
    own: Counter[str] = Counter()
    for (_tenant, lexeme, scope), n in lexemes.items():
        if scope in (uuid.UUID(int=0), A):
            own[lexeme] += n
    with services.db.as_user(user_identity(A)) as conn:
        terms = conn.execute("select terms from hybrid_search_terms(%s)", (text,)).fetchone()[0]
    assert {t["lexeme"]: t["df"] for t in terms} == {t["lexeme"]: own[t["lexeme"]] for t in terms}
    assert own != corpus_wide
