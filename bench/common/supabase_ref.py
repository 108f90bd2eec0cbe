"""The Supabase guide's hybrid_search as a baseline, in schema supabase_ref of the scratch database."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import psycopg

from backend.db.connection import connect

SQL_FILE = Path(__file__).with_name("supabase_ref.sql")
# The guide's functions resolve `documents` through the caller's search_path, as they would in a
# Supabase project whose public schema held only the guide's table.
SEARCH_PATH = "supabase_ref, extensions"


def install(url: str, texts: Mapping[int, str]) -> int:
    """Create the guide's table, indexes and function, then load one row per chunk of public.chunks.

    Each row keeps its chunk's id (so results map back to documents), the text that chunk's
    embedding was computed from, and that very embedding, copied in SQL.
    """
    with connect(url) as conn:
        conn.execute(SQL_FILE.read_text(encoding="utf-8"))  # no parameters: '%' and '$$' stay literal
        conn.execute("create temp table ref_texts (chunk_id bigint primary key, content text not null)")
        with conn.cursor() as cur, cur.copy("copy ref_texts (chunk_id, content) from stdin") as copy:
            for chunk_id, text in texts.items():
                copy.write_row((chunk_id, text))
        conn.execute("""
            insert into supabase_ref.documents (id, content, embedding) overriding system value
            select c.id, t.content, c.embedding::vector(384)
            from public.chunks c join ref_texts t on t.chunk_id = c.id
            order by c.id
            """)
        conn.execute("analyze supabase_ref.documents")
        row = conn.execute(
            "select count(*) = (select count(*) from public.chunks), count(*) from supabase_ref.documents"
        ).fetchone()
        conn.commit()
    if not row or not row[0]:
        raise RuntimeError(f"supabase_ref.documents holds {row[1] if row else 0} rows, not one per chunk")
    return int(row[1])


def open_connection(url: str) -> psycopg.Connection:
    """A connection that sees the guide's objects first, with Supabase's default text search config."""
    conn = connect(url, autocommit=True)
    conn.execute(f"set search_path = {SEARCH_PATH}")
    # Supabase projects run with english; websearch_to_tsquery(query_text) relies on that default.
    conn.execute("set default_text_search_config = 'pg_catalog.english'")
    return conn


def search(
    conn: psycopg.Connection, *, query_text: str, query_embedding: np.ndarray, match_count: int = 10
) -> list[int]:
    """Chunk ids, best first, exactly as the guide's function orders them."""
    rows = conn.execute(
        "select id from hybrid_search(query_text => %(q)s, query_embedding => %(e)s::vector(384), "
        "match_count => %(n)s)",
        {"q": query_text, "e": query_embedding, "n": match_count},
    ).fetchall()
    return [r[0] for r in rows]


def full_text_matches(conn: psycopg.Connection, *, query_text: str) -> int:
    """How many rows the guide's full-text leg matches (websearch_to_tsquery is an AND of the words)."""
    row = conn.execute(
        "select count(*) from documents where fts @@ websearch_to_tsquery(%(q)s)", {"q": query_text}
    ).fetchone()
    return int(row[0]) if row else 0
