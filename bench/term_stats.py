"""What the term statistics cost on a corpus of many owners: the insert trigger, idf lookups, upkeep.

Usage: .venv/bin/python -m bench.term_stats [--size 20000] [--queries 300] [--datasets-dir DIR]

Loads --size chunks of the synthetic corpus (bench/common/synthetic.py: 1 % public, three bench
tenants, 16 other owners, so most COPY statements mix many owners: the worst case for statistics kept
per owner) with the statement-level triggers on, in COPY statements of 2,000 chunks, and reports the
time the insert trigger took (track_functions), then hybrid_search_terms() per call for real
questions (median of three passes, client round trip included) as the backend's own role and as a
tenant, refresh_term_stats(), and deleting 200 documents. To compare two commits, run it in a
checkout of each (the module only needs bench.latency.load and the migrations of its checkout).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from backend.db.connection import connect
from bench.common import DATASETS_DIR, RESULTS_DIR, log
from bench.common.db import scalar, scratch_database
from bench.common.report import run_record, write_json
from bench.common.synthetic import SentencePool, SyntheticCorpus, load_queries, tenant_id
from bench.latency.load import load

DIMS = 384


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000, help="synthetic chunks")
    parser.add_argument("--queries", type=int, default=300, help="questions for the idf lookups")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "term-stats.json")
    return parser.parse_args(argv)


def per_call_us(conn: psycopg.Connection, texts: list[str], setup: Callable[[], object]) -> float:
    """Median over three passes of the mean time of one hybrid_search_terms() call, in µs."""
    passes = []
    for _ in range(3):
        with conn.transaction(force_rollback=True):
            setup()
            started = time.perf_counter()
            for text in texts:
                conn.execute("select * from hybrid_search_terms(%s)", (text,)).fetchall()
            passes.append((time.perf_counter() - started) / len(texts) * 1e6)
    return round(statistics.median(passes), 1)


def seconds(conn: psycopg.Connection, statement: str, params: Any = None) -> float:
    started = time.perf_counter()
    conn.execute(statement, params)
    return round(time.perf_counter() - started, 3)


def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    pool = SentencePool.load(args.datasets_dir)
    texts = [q.terms for q in load_queries(pool, DIMS, 7, args.queries)]
    out: dict[str, Any] = {"size": args.size}
    corpus = SyntheticCorpus(pool, args.size, DIMS, seed=42)
    out["load"] = load(
        url,
        corpus,
        model="synthetic@384",
        term_stats="trigger",
        batch_chunks=2_000,
        maintenance_work_mem="256MB",
    )
    claims = json.dumps({"sub": str(tenant_id("tenant-1%")), "role": "authenticated"})
    as_tenant = "select set_config('role', 'authenticated', true), set_config('request.jwt.claims', %s, true)"
    with connect(url, autocommit=True) as conn:
        out["term_stats_rows"] = scalar(conn, "select count(*) from term_stats")
        out["terms_us_backend_role"] = per_call_us(conn, texts, lambda: None)
        out["terms_us_tenant"] = per_call_us(
            conn,
            texts,
            lambda: conn.execute(as_tenant, (claims,)),
        )
        out["refresh_seconds"] = seconds(conn, "select refresh_term_stats()")
        ids = [r[0] for r in conn.execute("select id from documents order by id limit 200").fetchall()]
        out["deleted_chunks"] = scalar(
            conn, "select count(*) from chunks where document_id = any(%s)", (ids,)
        )
        out["delete_200_documents_seconds"] = seconds(
            conn, "delete from documents where id = any(%s)", (ids,)
        )
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with scratch_database("term_stats") as url:
        report = {**run_record("bench.term_stats"), **measure(url, args)}
    load_out = report["load"]
    log(
        f"{report['size']} chunks: COPY {load_out['copy_seconds']} s, of which the insert trigger "
        f"{load_out['trigger_seconds']} s; {report['term_stats_rows']} term_stats rows; "
        f"hybrid_search_terms {report['terms_us_backend_role']} µs (backend role), "
        f"{report['terms_us_tenant']} µs (tenant); refresh {report['refresh_seconds']} s; "
        f"deleting 200 documents ({report['deleted_chunks']} chunks) "
        f"{report['delete_200_documents_seconds']} s"
    )
    write_json(args.out, report)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
