"""sql/citus/ follows the single-node functions it replaces (no Citus needed: it reads the migrated
single-node database).

db distribute replaces a function of the migrations with its Citus form (sql/citus/<name>.sql) where
the single-node body would query other shards. The two must rank, filter and count the same, so when a
migration or sql/ changes one of those functions, its Citus form must follow. sql/citus/mirrors.txt
records the definition each Citus form was last written against; this test fails as soon as one node's
definition moves, naming the file to bring along. The distributed tests (make test-distributed) then
prove the two agree."""

from __future__ import annotations

import hashlib
import re

import psycopg

from backend.db.distribute import CITUS_SQL_DIR, function_files

MIRRORS = CITUS_SQL_DIR / "mirrors.txt"
_CREATED = re.compile(r"create or replace function public\.([a-z_]+)\s*\(", re.IGNORECASE)


def replaced_functions(conn: psycopg.Connection) -> dict[str, str]:
    """{regprocedure: sha256 of its single-node definition} for each function sql/citus/ replaces."""
    names = {
        m.group(1) for path in function_files() for m in _CREATED.finditer(path.read_text(encoding="utf-8"))
    }
    conn.execute("set search_path = public, extensions")  # type names print the same way every time
    rows = conn.execute(
        "select p.oid::regprocedure::text, pg_get_functiondef(p.oid) from pg_proc p "
        "where p.pronamespace = 'public'::regnamespace and p.proname = any(%s) order by 1",
        (sorted(names),),
    ).fetchall()
    return {r[0]: hashlib.sha256(r[1].encode()).hexdigest() for r in rows}


def recorded() -> dict[str, str]:
    lines = [line.split(maxsplit=1) for line in MIRRORS.read_text(encoding="utf-8").splitlines()]
    return {parts[1]: parts[0] for parts in lines if parts and not parts[0].startswith("#")}


def test_every_function_sql_citus_replaces_is_as_it_was_when_its_citus_form_was_written(db):
    current = replaced_functions(db)
    assert current, "no single-node function found for sql/citus/"
    changed = sorted(f for f in current if recorded().get(f) != current[f])
    expected = "\n".join(f"{digest}  {function}" for function, digest in current.items())
    assert not changed, (
        f"one node's definition changed for {changed}: bring sql/citus/<name>.sql along (its header "
        f"says what differs on Citus), run make test-distributed, then record in {MIRRORS.name}:\n{expected}"
    )


# Citus before citusdata/citus#8824 (merged September 2026; a3d5708a6ae8 predates it) adds a local
# plan to a generic plan at every execution whose shard is pruned at run time: a trigger on a shard
# that reads a co-located table by the row's tenant grew its worker backend by ~56 kB per row (the 1M
# benchmark load was killed at 460k chunks). tests/distributed/test_worker_memory.py measures it on a cluster.
def test_every_trigger_function_of_the_cluster_plans_each_execution():
    triggers = {
        path.stem: path.read_text(encoding="utf-8")
        for path in sorted(CITUS_SQL_DIR.glob("*.sql"))
        if re.search(r"returns trigger\s+language plpgsql", path.read_text(encoding="utf-8"))
    }
    assert {"chunks_inherit_document_access", "distribute"} <= triggers.keys()
    generic = [
        name
        for name, text in triggers.items()
        for header in re.findall(r"returns trigger\s+language plpgsql(.*?)as \$\$", text, re.S)
        if "set plan_cache_mode = force_custom_plan" not in header
    ]
    assert generic == []
