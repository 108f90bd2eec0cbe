"""What compiling a search filter costs the database (issue 24, finding 6).

Usage: .venv/bin/python -m bench.filter_cost [--sizes 100 1000 10000] [--compare-with REF]
Times `search_filter()` on filters of the finding's shape ({"$or": groups of {"$or": 100 x one-tag
$contains}}, what the API makes of {"tags": {"$in": [...]}}) as CPU seconds of the server process
that ran it (from /proc, so other load on the machine does not count). --compare-with REF also loads
sql/search_filter*.sql as they were at git REF (into a schema of their own) and times them beside.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from backend import PROJECT_ROOT
from bench.common.db import scratch_database
from bench.common.report import markdown_table

FILES = (
    "search_filter_epochs.sql",
    "search_filter_target.sql",
    "search_filter_path.sql",
    "search_filter.sql",
)


def tag_filter(values: int) -> dict[str, Any]:
    groups = max(1, values // 100)
    return {
        "$or": [
            {"$or": [{"tags": {"$contains": [f"t{g}-{i}"]}} for i in range(values // groups)]}
            for g in range(groups)
        ]
    }


def backend_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_functions_at(conn: psycopg.Connection[Any], ref: str, schema: str) -> None:
    """The filter functions of git REF, renamed into `schema` (they call each other as public.x)."""
    conn.execute(f"create schema {schema}")
    for name in FILES:
        text = subprocess.run(
            ["git", "show", f"{ref}:sql/{name}"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout
        conn.execute(re.sub(r"\bpublic\.(search_filter\w*)", rf"{schema}.\1", text))


def cpu_ms(conn: psycopg.Connection[Any], function: str, values: int, repeats: int) -> float:
    pid = conn.info.backend_pid
    best = float("inf")
    for _ in range(repeats):
        before = backend_cpu_s(pid)
        conn.execute(f"select count(*) from {function}(%s)", (Jsonb(tag_filter(values)),)).fetchone()
        best = min(best, backend_cpu_s(pid) - before)
        if best > 5:
            break  # one run of a slow one is enough
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--compare-with", metavar="REF", help="a git ref whose search_filter to time beside")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with scratch_database("filter_cost") as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set search_path = public, extensions")
        if args.compare_with:
            load_functions_at(conn, args.compare_with, "filter_before")
        rows = []
        for size in args.sizes:
            row = [f"{size:,}", f"{cpu_ms(conn, 'public.search_filter', size, args.repeats):.0f}"]
            if args.compare_with:
                row.append(f"{cpu_ms(conn, 'filter_before.search_filter', size, args.repeats):.0f}")
            rows.append(row)
    headers = ["values", "search_filter CPU ms (now)"]
    if args.compare_with:
        headers.append(f"CPU ms at {args.compare_with}")
    print("(CPU time is counted in 10 ms ticks)")
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
