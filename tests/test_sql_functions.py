"""hybrid_search and match_documents against the real database, with exact tiny vectors."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.db import migrations
from backend.db.connection import connect
from backend.text import query_terms
from tests.factories import axis, copy_random_chunks, insert_chunk, insert_document, unit


def hybrid(conn, text, embedding, k=10, **kw):
    params = {
        "text": text,
        "embedding": embedding,
        "k": k,
        "ftw": kw.get("ftw", 1.0),
        "sw": kw.get("sw", 1.0),
        "rrf_k": kw.get("rrf_k", 60),
        "filter": Jsonb(kw.get("filter", {})),
    }
    return conn.execute(
        "select id, content, full_text_rank, vector_rank, rrf_score, similarity from hybrid_search("
        "query_text => %(text)s, query_embedding => %(embedding)s, match_count => %(k)s, "
        "full_text_weight => %(ftw)s, semantic_weight => %(sw)s, rrf_k => %(rrf_k)s, filter => %(filter)s)",
        params,
    ).fetchall()


def test_hybrid_finds_a_chinese_chunk_only_full_text_matches_and_one_only_the_vector_matches(db):
    doc = insert_document(db, title="袋鼠")
    text_only = insert_chunk(db, doc, "尤金袋鼠分布在澳洲南部岛屿及西岸地区。", axis(5), position=0)
    vector_only = insert_chunk(db, doc, "这段文字与问题没有共同的词语。", unit([1, 0.1]), position=1)
    insert_chunk(db, doc, "完全无关的内容，讲的是天气。", axis(9), position=2)

    query = " ".join(query_terms("尤金袋鼠分布在哪些地区？"))
    rows = {r[0]: r for r in hybrid(db, query, axis(0), k=3)}

    assert rows[text_only][2] == 1
    assert rows[text_only][3] is not None
    assert rows[vector_only][2] is None
    assert rows[vector_only][3] == 1
    # Full-text-only rows still carry their cosine, so Python can rerank without a second query.
    assert rows[text_only][5] == pytest.approx(0.0, abs=1e-6)
    assert rows[vector_only][5] == pytest.approx(float(unit([1, 0.1]) @ axis(0)), abs=1e-5)


def test_full_text_leg_matches_any_term_not_all_terms(db):
    doc = insert_document(db)
    partial = insert_chunk(db, doc, "袋鼠是有袋类动物。", axis(1))
    rows = hybrid(db, "尤金 袋鼠 分布 地区 澳洲", None, sw=0.0)
    assert [r[0] for r in rows] == [partial]


def test_english_queries_use_the_full_text_leg(db):
    doc = insert_document(db)
    hit = insert_chunk(db, doc, "The Panthers defense surrendered only 308 points.", axis(1), position=0)
    insert_chunk(db, doc, "Kangaroos live in Australia.", axis(2), position=1)
    query = " ".join(query_terms("How many points did the Panthers defense surrender?"))
    rows = hybrid(db, query, None, sw=0.0)
    assert [r[0] for r in rows] == [hit]


def test_raising_one_legs_weight_changes_the_order(db):
    doc = insert_document(db)
    # Both chunks are in both legs; each leg ranks a different one first.
    text_hit = insert_chunk(db, doc, "袋鼠 袋鼠 袋鼠", axis(3), position=0)
    vector_hit = insert_chunk(db, doc, "袋鼠 以及 许多 其他 无关 的 词语 内容", axis(0), position=1)
    ordered = lambda ftw, sw: [r[0] for r in hybrid(db, "袋鼠", axis(0), ftw=ftw, sw=sw)][:2]  # noqa: E731
    assert ordered(3.0, 1.0) == [text_hit, vector_hit]
    assert ordered(1.0, 3.0) == [vector_hit, text_hit]


def test_rrf_score_is_the_weighted_sum_of_reciprocal_ranks(db):
    doc = insert_document(db)
    both = insert_chunk(db, doc, "袋鼠", axis(0))
    (row,) = [r for r in hybrid(db, "袋鼠", axis(0), ftw=2.0, sw=0.5, rrf_k=10) if r[0] == both]
    assert row[4] == pytest.approx(2.0 / 11 + 0.5 / 11)


def test_filter_matching_3_of_1000_chunks_returns_exactly_those_3(db):
    doc = insert_document(db)
    rng = np.random.default_rng(7)
    wanted = set()
    with db.cursor():
        for i in range(1000):
            v = rng.normal(size=384).astype(np.float32)
            meta = {"lang": "zh", "tags": ["rare"]} if i % 333 == 5 else {"lang": "en"}
            cid = insert_chunk(
                db,
                doc,
                f"袋鼠 chunk {i}",
                v / np.linalg.norm(v),
                position=i,
                metadata=meta,
                tokens=f"袋鼠 chunk {i}",
            )
            if "tags" in meta:
                wanted.add(cid)
    assert len(wanted) == 3
    rows = hybrid(db, "袋鼠", axis(0), k=10, filter={"tags": ["rare"]})
    assert {r[0] for r in rows} == wanted
    matched = db.execute(
        "select id from match_documents(%s, 10, -1, %s)", (axis(0), Jsonb({"tags": ["rare"]}))
    ).fetchall()
    assert {r[0] for r in matched} == wanted


def test_match_documents_honours_min_similarity_and_orders_best_first(db):
    doc = insert_document(db)
    close = insert_chunk(db, doc, "a", unit([1, 0.2]), position=0)  # cos ~0.98
    medium = insert_chunk(db, doc, "b", unit([1, 1]), position=1)  # cos ~0.71
    insert_chunk(db, doc, "c", unit([0.2, 1]), position=2)  # cos ~0.20
    rows = db.execute("select id, similarity from match_documents(%s, 10, 0.3)", (axis(0),)).fetchall()
    assert [r[0] for r in rows] == [close, medium]
    assert all(r[1] >= 0.3 for r in rows)


def test_wrong_dimension_query_embedding_gives_a_clear_error(db):
    doc = insert_document(db)
    insert_chunk(db, doc, "袋鼠", axis(0))
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
        db.execute("select * from match_documents(%s, 5)", (axis(0, dims=768),))
    message = str(err.value)
    assert "768 dimensions" in message
    assert "test-model@384 (384 dimensions)" in message
    assert "re-embed" in (err.value.diag.message_hint or "")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="does not match the stored chunks"):
        hybrid(db, "袋鼠", axis(0, dims=768))


def test_query_with_another_model_of_the_same_dimension_is_refused(db):
    doc = insert_document(db)
    insert_chunk(db, doc, "袋鼠", axis(0), model="local-e5@384")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="model other-model@384"):
        db.execute(
            "select * from match_documents(%s, 5, query_embedding_model => 'other-model@384')", (axis(0),)
        )


def test_768_and_384_dimension_corpora_share_the_schema(db):
    doc = insert_document(db)
    small = insert_chunk(db, doc, "小", axis(0, dims=384), position=0, model="local@384")
    large = insert_chunk(db, doc, "大", axis(0, dims=768), position=1, model="gemini@768")
    assert db.execute("select id from match_documents(%s, 5)", (axis(0, dims=768),)).fetchall() == [(large,)]
    assert db.execute("select id from match_documents(%s, 5)", (axis(0, dims=384),)).fetchall() == [(small,)]


def test_empty_corpus_returns_no_rows_instead_of_an_error(db):
    assert hybrid(db, "袋鼠", axis(0)) == []


def test_bad_parameters_are_refused_with_a_message(db):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="match_count"):
        hybrid(db, "袋鼠", axis(0), k=0)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="weights must not be negative"):
        hybrid(db, "袋鼠", axis(0), ftw=-1.0)


# --- 10,000 chunks: iterative index scans under a 1% filter, and the plans the legs use -----------


@pytest.fixture(scope="module")
def big_corpus(fresh_database):
    """10,000 chunks with random 384-d vectors; 1% tagged rare; loaded with COPY."""
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        doc = insert_document(conn)
        vectors = copy_random_chunks(
            conn,
            10_000,
            document_for=lambda i: doc,
            metadata_for=lambda i: {"bucket": "rare"} if i % 100 == 0 else {"bucket": "common"},
        )
        conn.commit()
    return url, vectors


def test_selective_filter_keeps_match_count_rows_through_hnsw_iterative_scan(big_corpus):
    url, vectors = big_corpus
    query = vectors[1234] + 0.1 * vectors[100]
    query /= np.linalg.norm(query)
    rare = np.arange(0, 10_000, 100)
    exact = rare[np.argsort(-(vectors[rare] @ query))][:20]
    with connect(url) as conn:
        rows = conn.execute(
            # exact_scan_threshold 0: this is about the HNSW walk, not the exact scan of a small scope.
            "select position from match_documents(%s, 20, -1, %s, exact_scan_threshold => 0)",
            (query, Jsonb({"bucket": "rare"})),
        ).fetchall()
        hybrid_rows = conn.execute(
            "select position from hybrid_search(null, %s, 20, filter => %s, exact_scan_threshold => 0)",
            (query, Jsonb({"bucket": "rare"})),
        ).fetchall()
    assert len(rows) == 20
    assert len(hybrid_rows) == 20
    assert all(p % 100 == 0 for (p,) in rows)
    recall = len({p for (p,) in rows} & set(exact.tolist())) / 20
    assert recall >= 0.9


def _plan(conn, function_query: str, dims: int, types: str, args: str, vector: np.ndarray) -> str:
    """EXPLAIN the exact statement the function runs (as sql/README.md tells a DBA to)."""
    sql = conn.execute(f"select public.{function_query}(%s)", (dims,)).fetchone()[0]
    conn.execute("set search_path = public, extensions")
    conn.execute(f"prepare leg_plan ({types}) as {sql}")
    literal = "'[" + ",".join(f"{x:.6f}" for x in vector) + "]'"
    try:
        rows = conn.execute(
            f"explain (costs off) execute leg_plan ({args.replace('%s', literal)})"
        ).fetchall()
    finally:
        conn.execute("deallocate leg_plan")
    return "\n".join(r[0] for r in rows)


def test_explain_shows_hnsw_for_the_vector_leg_and_gin_for_the_full_text_leg(big_corpus):
    url, vectors = big_corpus
    with connect(url, autocommit=True) as conn:
        plan = _plan(
            conn,
            "hybrid_search_query",
            384,
            "vector, tsquery, int, jsonb, float8, float8, bool, bool, text, float8, int, tsquery[], float8[],"
            " float8, float8, bigint[], jsonpath, jsonb, bool, jsonb, timestamptz, timestamptz, timestamptz,"
            " timestamptz, bigint[], float8[], uuid[], int",
            "%s, public.or_tsquery('编号77 编号78'), 40, '{}', 1, 1, true, true, null, 60, 10,"
            " array[public.or_tsquery('编号77'), public.or_tsquery('编号78')], array[5.0, 5.0], 0.5, 6.0,"
            " null, null, '{}', false, '{}', null, null, null, null, null, null, null, null",
            vectors[0],
        )
        assert "chunks_embedding_384_hnsw_idx" in plan, plan
        assert "chunks_fts_scope_idx" in plan, plan

        plan = _plan(
            conn,
            "match_documents_query",
            384,
            "vector, int, text, float8, int, jsonpath, jsonb, bool, jsonb, timestamptz, timestamptz,"
            " timestamptz, timestamptz, bigint[], float8[], uuid[]",
            "%s, 10, null, 0.3, null, null, '{}', false, '{}', null, null, null, null, null, null, null",
            vectors[0],
        )
        assert "chunks_embedding_384_hnsw_idx" in plan, plan


@pytest.mark.parametrize("dims", [1024, 1536])
def test_the_vector_leg_of_a_1024_or_1536_dimension_model_has_an_hnsw_index(big_corpus, dims):
    """bge-m3 (1024) and text-embedding-3-small (1536) corpora are searched through HNSW (migration 027),
    not ranked by an exact scan of every chunk. The corpus holds no vector of that size, so the planner
    rightly sorts the none it would find; with sorting priced out it must show that the index matches
    the statement the vector leg runs (same cast, same predicate)."""
    url, _ = big_corpus
    with connect(url, autocommit=True) as conn:
        conn.execute("set enable_sort = off")
        plan = _plan(
            conn,
            "match_documents_query",
            dims,
            "vector, int, text, float8, int, jsonpath, jsonb, bool, jsonb, timestamptz, timestamptz,"
            " timestamptz, timestamptz, bigint[], float8[], uuid[]",
            "%s, 10, null, 0.3, null, null, '{}', false, '{}', null, null, null, null, null, null, null",
            np.full(dims, 0.5),
        )
        assert f"chunks_embedding_{dims}_hnsw_idx" in plan, plan


# --- term statistics and the BM25-style full-text leg ---------------------------------------------


def test_term_statistics_follow_inserts_and_deletes(db):
    doc = insert_document(db)
    insert_chunk(db, doc, "袋鼠 澳洲", axis(0), position=0, tokens="袋鼠 澳洲")
    insert_chunk(db, doc, "袋鼠 岛屿 岛屿", axis(1), position=1, tokens="袋鼠 岛屿 岛屿")
    stats = dict(db.execute("select lexeme, ndoc from term_stats").fetchall())
    assert stats == {"袋鼠": 2, "澳洲": 1, "岛屿": 1}
    assert db.execute("select nchunks, total_lexemes from corpus_stats").fetchone() == (2, 4)
    db.execute("delete from chunks where position = 0")
    stats = dict(db.execute("select lexeme, ndoc from term_stats where ndoc > 0").fetchall())
    assert stats == {"袋鼠": 1, "岛屿": 1}
    assert db.execute("select nchunks from corpus_stats").fetchone() == (1,)
    db.execute("select refresh_term_stats()")
    assert dict(db.execute("select lexeme, ndoc from term_stats").fetchall()) == {"袋鼠": 1, "岛屿": 1}


def test_a_rare_term_outweighs_a_common_one_in_the_full_text_leg(db):
    doc = insert_document(db)
    for i in range(20):  # "地区" is everywhere, "尤金" in one chunk
        insert_chunk(db, doc, f"地区 编号{i}", axis(2), position=i, tokens=f"地区 地区 编号{i}")
    rare = insert_chunk(db, doc, "尤金", axis(3), position=99, tokens="尤金 其他 内容 很多 词语")
    rows = hybrid(db, "地区 尤金", None, sw=0.0)
    assert rows[0][0] == rare
    assert rows[0][2] == 1


def test_very_common_terms_do_not_drive_the_match_on_large_corpora(db):
    doc = insert_document(db)
    for i in range(10):
        insert_chunk(db, doc, f"c{i}", axis(2), position=i, tokens=f"地区 编号{i}")
    params = "query_text => '地区 编号3', query_embedding => null, match_count => 10, semantic_weight => 0"
    everything = db.execute(f"select id from hybrid_search({params})").fetchall()
    assert len(everything) == 10  # small corpus: every term matches
    narrowed = db.execute(
        f"select h.position from hybrid_search({params}, common_term_ratio => 0.5, common_term_min_df => 2) h"
    ).fetchall()
    assert narrowed == [(3,)]  # "地区" (in all 10) only scores; "编号3" drives the match
    only_common = db.execute(
        "select count(*) from hybrid_search('地区', null, 10, semantic_weight => 0, "
        "common_term_ratio => 0.5, common_term_min_df => 2)"
    ).fetchone()
    assert only_common == (10,)  # all terms common: the rarest still match


def test_the_full_text_match_takes_the_rarest_terms_within_the_df_budget(db):
    doc = insert_document(db)
    for i in range(10):  # "甲" in 1 chunk, "乙" in 3, "丙" in 6
        tokens = " ".join(t for t, n in (("甲", 1), ("乙", 3), ("丙", 6)) if i < n) + f" 编号{i}"
        insert_chunk(db, doc, tokens, axis(2), position=i, tokens=tokens)
    terms = db.execute(
        "select terms, match_query::text from hybrid_search_terms('甲 乙 丙', match_df_budget => 4)"
    ).fetchone()
    assert [(t["lexeme"], t["df"], t["matched"]) for t in terms[0]] == [
        ("甲", 1, True),
        ("乙", 3, True),
        ("丙", 6, False),
    ]
    assert terms[1] == "'乙' | '甲'"

    def matched(budget: int) -> list[int]:
        rows = db.execute(
            "select position from hybrid_search('甲 乙 丙', null, 10, semantic_weight => 0, "
            "match_df_budget => %s) order by position",
            (budget,),
        ).fetchall()
        return [r[0] for r in rows]

    assert matched(2000) == list(range(6))  # small corpus: every term matches
    assert matched(4) == [0, 1, 2]  # "丙" only scores the rows "甲" or "乙" matched
    # Even the rarest term exceeds the budget: the chunks with both of the two rarest terms.
    terms_sql = "select match_query::text from hybrid_search_terms(%s, match_df_budget => 2)"
    assert db.execute(terms_sql, ("乙 丙",)).fetchone()[0] == "'乙' & '丙'"
    assert matched(0) == [0]
    assert db.execute(terms_sql, ("丙",)).fetchone()[0] == "'丙'"


def test_a_conjunction_skips_terms_contained_in_a_longer_query_term(db):
    doc = insert_document(db)
    for i in range(9):  # search mode indexes 杰克 and 克逊 wherever it indexes 杰克逊
        tokens = ("杰克 克逊 杰克逊 " if i < 6 else "") + ("维尔" if i >= 3 else "") + f" 编号{i}"
        insert_chunk(db, doc, tokens, axis(2), position=i, tokens=tokens)
    match = db.execute(
        "select match_query::text from hybrid_search_terms('杰克 克逊 杰克逊 维尔', match_df_budget => 2)"
    ).fetchone()[0]
    assert match == "'杰克逊' & '维尔'"
    rows = db.execute(
        "select position from hybrid_search('杰克 克逊 杰克逊 维尔', null, 10, semantic_weight => 0, "
        "match_df_budget => 2) order by position"
    ).fetchall()
    assert [r[0] for r in rows] == [3, 4, 5]
