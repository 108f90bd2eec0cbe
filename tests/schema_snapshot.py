"""A comparable description of every schema object in `public` (for migration equivalence tests)."""

from __future__ import annotations

import psycopg

_QUERIES = {
    "columns": """
        select table_name, column_name, data_type, udt_name, is_nullable, column_default,
               is_generated, generation_expression
        from information_schema.columns
        where table_schema = 'public' and table_name <> 'alembic_version'
        order by table_name, column_name""",
    "indexes": """
        select tablename, indexname, indexdef from pg_indexes
        where schemaname = 'public' and tablename <> 'alembic_version' order by indexname""",
    "constraints": """
        select conrelid::regclass::text, conname, pg_get_constraintdef(oid) from pg_constraint
        where connamespace = 'public'::regnamespace and conrelid::regclass::text <> 'alembic_version'
        order by 1, 2""",
    "functions": """
        select p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid)
        from pg_proc p where p.pronamespace = 'public'::regnamespace order by 1, 2""",
    "rls": """
        select relname, relrowsecurity from pg_class
        where relnamespace = 'public'::regnamespace and relkind = 'r' and relname <> 'alembic_version'
        order by 1""",
    "extensions": "select extname, extnamespace::regnamespace::text from pg_extension order by 1",
}


def snapshot(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in _QUERIES.items()}


def function_definitions(conn: psycopg.Connection) -> dict[str, str]:
    conn.execute("set search_path = public, extensions")  # type names print the same either way
    rows = conn.execute(_QUERIES["functions"]).fetchall()
    return {f"{name}({args})": definition for name, args, definition in rows}
