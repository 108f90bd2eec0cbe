"""The Supabase guide's hybrid_search as a baseline, in schema supabase_ref of the scratch database."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import psycopg
from psycopg import sql

from backend.db.connection import connect
from bench.common.db import scalar, timed

SQL_FILE = Path(__file__).with_name("supabase_ref.sql")
# hybrid_search: the guide as published; hybrid_search_indexed: its vector leg rewritten to use the index.
GuideFunction = Literal["hybrid_search", "hybrid_search_indexed"]
# The guide's functions resolve `documents` through the caller's search_path, as they would in a
# Supabase project whose public schema held only the guide's table.
SEARCH_PATH = "supabase_ref, extensions"
HNSW_INDEX = (
    "select indexname, indexdef from pg_indexes where schemaname = 'supabase_ref' "
    "and indexdef like '%USING hnsw%'"
)


def install(
    url: str, *, texts: Mapping[int, str] | None = None, dims: int = 384, maintenance_work_mem: str = ""
) -> dict[str, float]:
    """The guide's table, indexes and function, with one row per chunk of public.chunks: the chunk's
    id (so results map back to documents), its embedding, and as text texts[chunk id] (what that
    embedding was computed from) or else its document's title and its content.

    supabase_ref.sql creates the HNSW index before any row exists; with maintenance_work_mem (large
    loads, where that would insert row by row) it is dropped for the load and rebuilt after it.
    Returns the seconds of each step.
    """
    with connect(url) as conn:
        conn.execute("drop schema if exists supabase_ref cascade")
        # No parameters, so '%' and '$$' stay literal.
        conn.execute(SQL_FILE.read_text(encoding="utf-8").replace("vector(384)", f"vector({dims})"))
        text = sql.SQL("d.title || E'\\n' || c.content")
        join = sql.SQL("join public.documents d on d.id = c.document_id")
        if texts is not None:
            conn.execute("create temp table ref_texts (chunk_id bigint primary key, content text not null)")
            with conn.cursor() as cur, cur.copy("copy ref_texts (chunk_id, content) from stdin") as copy:
                for chunk_id, content in texts.items():
                    copy.write_row((chunk_id, content))
            text, join = sql.SQL("t.content"), sql.SQL("join ref_texts t on t.chunk_id = c.id")
        index, indexdef = conn.execute(HNSW_INDEX).fetchone() or (None, None)
        if maintenance_work_mem:
            conn.execute(sql.SQL("drop index supabase_ref.{}").format(sql.Identifier(index)))
        insert = sql.SQL(
            "insert into supabase_ref.documents (id, content, embedding) overriding system value "
            "select c.id, {text}, c.embedding::vector({dims}) from public.chunks c {join} order by c.id"
        ).format(text=text, dims=sql.Literal(dims), join=join)
        out = {"insert_seconds": timed(conn, insert)}
        if maintenance_work_mem:
            conn.execute(sql.SQL("set maintenance_work_mem = {}").format(sql.Literal(maintenance_work_mem)))
            out["hnsw_build_seconds"] = timed(conn, indexdef)
        conn.autocommit = True
        out["vacuum_analyze_seconds"] = timed(conn, "vacuum (analyze) supabase_ref.documents")
        rows = "select (select count(*) from supabase_ref.documents), (select count(*) from public.chunks)"
        ref_rows, chunks = conn.execute(rows).fetchone() or (0, 0)
    if ref_rows != chunks:
        raise RuntimeError(f"supabase_ref.documents holds {ref_rows} rows, not one per chunk ({chunks})")
    return out


def open_connection(url: str) -> psycopg.Connection:
    """A connection that sees the guide's objects first, with Supabase's default text search config."""
    conn = connect(url, autocommit=True)
    conn.execute(f"set search_path = {SEARCH_PATH}")
    # Supabase projects run with english; websearch_to_tsquery(query_text) relies on that default.
    conn.execute("set default_text_search_config = 'pg_catalog.english'")
    return conn


def search(
    conn: psycopg.Connection,
    *,
    query_text: str,
    query_embedding: np.ndarray,
    match_count: int,
    dims: int = 384,
    function: GuideFunction = "hybrid_search",
) -> list[int]:
    """Chunk ids, best first, exactly as the guide's function (or its indexed rewrite) orders them."""
    query = sql.SQL(
        "select id from {}(query_text => %(q)s, query_embedding => %(e)s::vector({}), match_count => %(n)s)"
    ).format(sql.Identifier(function), sql.Literal(dims))
    rows = conn.execute(query, {"q": query_text, "e": query_embedding, "n": match_count}).fetchall()
    return [r[0] for r in rows]


def full_text_matches(conn: psycopg.Connection, *, query_text: str) -> int:
    """How many rows the guide's full-text leg matches (websearch_to_tsquery is an AND of the words)."""
    return int(
        scalar(conn, "select count(*) from documents where fts @@ websearch_to_tsquery(%s)", (query_text,))
    )
