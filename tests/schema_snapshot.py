"""A comparable description of every schema object in `public` (for migration equivalence tests)."""

from __future__ import annotations

import difflib

import psycopg

from backend.db.ship_sql import function_definitions

_PUBLIC_TABLES = """
    select c.oid from pg_class c
    where c.relnamespace = 'public'::regnamespace
      and c.relname not in ('alembic_version', 'alembic_version_pkc')"""

_QUERIES = {
    "columns": """
        select table_name, column_name, data_type, udt_name, is_nullable, column_default,
               is_generated, generation_expression
        from information_schema.columns
        where table_schema = 'public' and table_name <> 'alembic_version'
        order by table_name, column_name""",
    # attstorage: migration 010 keeps chunks.fts in the heap row (storage main).
    "storage": f"""
        select a.attrelid::regclass::text, a.attname, a.attstorage, a.attcompression
        from pg_attribute a join pg_class c on c.oid = a.attrelid
        where a.attrelid in ({_PUBLIC_TABLES}) and c.relkind in ('r', 'p', 'm')
          and a.attnum > 0 and not a.attisdropped
        order by 1, 2""",
    "relations": f"""
        select relname, relkind, relpersistence, reloptions::text, relacl::text from pg_class
        where oid in ({_PUBLIC_TABLES}) order by 1""",
    "indexes": """
        select tablename, indexname, indexdef from pg_indexes
        where schemaname = 'public' and tablename <> 'alembic_version' order by indexname""",
    "constraints": """
        select conrelid::regclass::text, conname, pg_get_constraintdef(oid) from pg_constraint
        where connamespace = 'public'::regnamespace and conrelid::regclass::text <> 'alembic_version'
        order by 1, 2""",
    "triggers": f"""
        select tgrelid::regclass::text, tgname, pg_get_triggerdef(oid), tgenabled from pg_trigger
        where not tgisinternal and tgrelid in ({_PUBLIC_TABLES}) order by 1, 2""",
    "rls": """
        select relname, relrowsecurity, relforcerowsecurity from pg_class
        where relnamespace = 'public'::regnamespace and relkind = 'r' and relname <> 'alembic_version'
        order by 1""",
    "policies": """
        select tablename, policyname, permissive, roles::text, cmd, qual, with_check from pg_policies
        where schemaname = 'public' order by 1, 2""",
    "function_privileges": """
        select p.oid::regprocedure::text, p.proacl::text from pg_proc p
        where p.pronamespace = 'public'::regnamespace
          and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass
                          and d.objid = p.oid and d.deptype = 'e')
        order by 1""",
    "extensions": "select extname, extnamespace::regnamespace::text from pg_extension order by 1",
}


def snapshot(url: str) -> dict[str, list[tuple]]:
    """Every category of _QUERIES, plus each function's pg_get_functiondef."""
    with psycopg.connect(url) as conn:
        return connection_snapshot(conn)


def connection_snapshot(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """snapshot() as this connection sees it (its own uncommitted changes included)."""
    result = {name: conn.execute(sql).fetchall() for name, sql in _QUERIES.items()}
    result["functions"] = sorted(function_definitions(conn).items())
    return result


# How many leading columns name an object in each category (the rest describe it).
_KEY_COLUMNS = {"columns": 2, "storage": 2, "indexes": 2, "constraints": 2, "triggers": 2, "policies": 2}


def differences(actual: dict[str, list[tuple]], expected: dict[str, list[tuple]]) -> list[str]:
    """One readable entry per object that differs between two snapshots (empty when equal)."""
    lines = []
    for category in sorted(expected.keys() | actual.keys()):
        width = _KEY_COLUMNS.get(category, 1)
        mine = {row[:width]: row[width:] for row in actual.get(category, [])}
        theirs = {row[:width]: row[width:] for row in expected.get(category, [])}
        for key in sorted(mine.keys() | theirs.keys(), key=str):
            name = ".".join(str(part) for part in key)
            if key not in theirs:
                lines.append(f"{category}: {name} is extra")
            elif key not in mine:
                lines.append(f"{category}: {name} is missing")
            elif mine[key] != theirs[key]:
                lines.append(f"{category}: {name} differs:\n{_diff(mine[key], theirs[key])}")
    return lines


def _diff(actual: tuple, expected: tuple) -> str:
    old, new = "\n".join(map(str, expected)).splitlines(), "\n".join(map(str, actual)).splitlines()
    changed = list(difflib.unified_diff(old, new, "expected", "actual", n=0, lineterm=""))
    return "\n".join(changed[:16] + (["..."] if len(changed) > 16 else []))
