"""Per-term corpus statistics of a query, as hybrid_search's full-text leg derives them."""

from __future__ import annotations

import psycopg

_TERMS = "select terms from public.hybrid_search_terms(%(query_text)s)"


def term_statistics(conn: psycopg.Connection, terms: list[str]) -> tuple[dict[str, float], dict[str, int]]:
    """idf and df of each query term (ln(1 + (N - df + 0.5) / (df + 0.5)), N = chunks).

    hybrid_search_terms reports lexemes of to_tsvector('simple', ...); a term the tsvector splits
    (rare: query_terms already drops punctuation) takes the largest idf among its lexemes.
    """
    if not terms:
        return {}, {}
    row = conn.execute(_TERMS, {"query_text": " ".join(terms)}).fetchone()
    by_lexeme = {t["lexeme"]: (float(t["idf"]), int(t["df"])) for t in (row[0] if row else [])}
    idfs: dict[str, float] = {}
    dfs: dict[str, int] = {}
    for term in terms:
        if term in by_lexeme:
            idfs[term], dfs[term] = by_lexeme[term]
        else:
            parts = [v for lex, v in by_lexeme.items() if lex in term]
            if parts:
                idfs[term], dfs[term] = max(parts)
    return idfs, dfs


def corpus_chunks(conn: psycopg.Connection) -> int:
    row = conn.execute("select coalesce(sum(nchunks), 0) from public.corpus_stats").fetchone()
    return int(row[0]) if row else 0


def chunk_totals(conn: psycopg.Connection) -> dict[str, int]:
    """Chunks per document id (what the seed formula's coverage_ratio divides by)."""
    rows = conn.execute("select document_id::text, count(*) from public.chunks group by 1").fetchall()
    return {r[0]: int(r[1]) for r in rows}


def chunk_texts(conn: psycopg.Connection) -> dict[int, str]:
    """Every chunk's text by id: what a sentence-level feature reads of a stored candidate."""
    return {int(r[0]): str(r[1]) for r in conn.execute("select id, content from public.chunks").fetchall()}
