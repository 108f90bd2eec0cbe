"""HNSW search parameters by measurement: latency and recall@10 of the vector leg per scope and variant.

    python -m bench.latency.tune --size 1000000 --queries 40 --variants ef=100 ef=200 ef=400 \
        --scopes unfiltered "selectivity 0.1" tenant-10%

On bench/latency's kept database of that size, every chunk's embedding is read once and the true
nearest chunks of each scope are computed by brute force in numpy (cosine, the scope's admitted ids
as the tables' owner counts them), so a variant costs only its own calls — the functions' exact plan
over a 1M-chunk scope takes seconds per query. Per scope and variant, each question runs through
`match_documents` and `hybrid_search` as the product calls them (identity, filter, narrowing of the
selectivity sweep; the settings' parameters with the variant's replaced), the variants alternated per
question. recall@10 of `match_documents`: its top 10 against the true top 10 above its similarity
floor; of `hybrid_search`'s vector leg: the rows it returns with vector_rank ≤ 10 (fusion keeps them
all in its top 30) against the true top 10. A variant is `name=value[,name=value]` over HybridParams
(ef = ef_search and filtered_ef_search; candidate_count; exact_scan_threshold). Written to
bench/results/tune-<size>.json and .md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from backend.db import migrations
from backend.db.connection import connect
from backend.db.ship_sql import apply_sql_folder
from backend.retrieval.params import HYBRID, MATCH, HybridParams
from bench.common import RESULTS_DIR, log
from bench.common.db import admin, bench_server, with_database
from bench.common.report import run_record, write_records
from bench.common.synthetic import SentencePool, load_queries
from bench.latency import load as bulk_load
from bench.latency.cells import sql_runner
from bench.latency.server import latency_settings
from bench.latency.sweep import Scope, scopes

MODEL = "multilingual-e5-small@384"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--variants", nargs="+", default=["ef=100", "ef=200"])
    parser.add_argument("--scopes", nargs="+", default=["unfiltered"])
    parser.add_argument("--selectivity", type=float, nargs="+", default=[0.0001, 0.001, 0.01, 0.02, 0.1, 0.5])
    parser.add_argument("--functions", nargs="+", default=[MATCH, HYBRID])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--label", default="", help="suffix of the output files")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return parser.parse_args(argv)


def variant_params(base: HybridParams, spec: str) -> HybridParams:
    changes: dict[str, Any] = {}
    for part in spec.split(","):
        name, value = part.split("=")
        if name == "ef":
            changes.update(ef_search=int(value), filtered_ef_search=int(value))
        else:
            changes[name] = None if value == "none" else int(value)
    return dataclasses.replace(base, **changes)


def all_vectors(url: str, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """(ids sorted, unit vectors) of every 384-d chunk; kept in `cache` for the next run on this load."""
    if cache.exists():
        data = np.load(cache)
        return data["ids"], data["vecs"]
    started = time.perf_counter()
    with connect(url) as conn:
        n = conn.execute("select count(*) from public.chunks where embedding_dims = 384").fetchone()[0]  # type: ignore[index]
        ids = np.empty(n, dtype=np.int64)
        vecs = np.empty((n, 384), dtype=np.float32)
        with (
            conn.cursor() as cur,
            cur.copy(
                "copy (select id, embedding::vector(384) from public.chunks where embedding_dims = 384 "
                "order by id) to stdout (format binary)"
            ) as copy,
        ):
            copy.set_types(["int8", "vector"])
            for i, row in enumerate(copy.rows()):
                ids[i] = row[0]
                vecs[i] = row[1].to_numpy()
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    log(f"  read {n:,} vectors in {time.perf_counter() - started:.0f} s")
    np.savez(cache, ids=ids, vecs=vecs)
    return ids, vecs


def admitted_ids(url: str, scope: Scope) -> np.ndarray | None:
    """The scope's chunk ids as the tables' owner reads them (None: every chunk)."""
    with connect(url, autocommit=True) as conn:
        if scope.collections is not None:
            rows = conn.execute(
                "select id from public.chunks c where collection_id = any(%s) and (c.visibility = 'public' "
                "or c.owner_id = %s or c.collection_id in (select m.collection_id from collection_members m "
                "where m.user_id = %s))",
                (scope.collections, scope.identity.user_id, scope.identity.user_id),  # type: ignore[union-attr]
            ).fetchall()
        elif scope.identity is not None:
            rows = conn.execute(
                "select id from public.chunks c where c.visibility = 'public' or c.owner_id = %s or "
                "c.collection_id in (select m.collection_id from collection_members m where m.user_id = %s)",
                (scope.identity.user_id, scope.identity.user_id),
            ).fetchall()
        elif scope.filter:
            rows = conn.execute(
                "select id from public.chunks where metadata @> %s::jsonb", (Jsonb(scope.filter),)
            ).fetchall()
        else:
            return None
    return np.array(sorted(r[0] for r in rows), dtype=np.int64)


def truth(
    ids: np.ndarray, vecs: np.ndarray, scope_ids: np.ndarray | None, q: np.ndarray, floor: float
) -> list[int]:
    if scope_ids is None:
        sims = vecs @ q
        pool = ids
    else:
        rows = np.searchsorted(ids, scope_ids)
        sims = vecs[rows] @ q
        pool = scope_ids
    top = np.argsort(-sims)[:10]
    return [int(pool[i]) for i in top if sims[i] >= floor]


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    url = with_database(bench_server(), bulk_load.database_name(args.size, 384))
    with connect(url) as conn:  # the functions sql/ defines now, as --reuse does
        apply_sql_folder(conn, migrations.SQL_DIR)
        conn.commit()
    settings = latency_settings()
    base = HybridParams.from_settings(settings)
    pool = SentencePool.load()
    queries = load_queries(pool, 384, args.seed, args.queries)
    (comment,) = admin(
        "select shobj_description(oid, 'pg_database') from pg_database where datname = %s",
        (bulk_load.database_name(args.size, 384),),
    )
    load_key = hashlib.sha1(str(comment).encode()).hexdigest()[:10]  # one cache per completed load
    ids, vecs = all_vectors(url, Path(tempfile.gettempdir()) / f"tune-vectors-{args.size}-{load_key}.npz")
    wanted = [s for s in scopes(args.selectivity) if s.label in args.scopes]
    out = []
    for scope in wanted:
        scope_ids = admitted_ids(url, scope)
        admitted = len(ids) if scope_ids is None else len(scope_ids)
        qv = [q.vector / np.linalg.norm(q.vector) for q in queries]
        truths_match = [truth(ids, vecs, scope_ids, v, settings.rag_min_similarity) for v in qv]
        truths_vec = [truth(ids, vecs, scope_ids, v, -2.0) for v in qv]
        for function in args.functions:
            runners = {}
            for spec in args.variants:
                run, close = sql_runner(
                    url,
                    settings,
                    MODEL,
                    function,
                    False,
                    identity=scope.identity,
                    tree=scope.filter,
                    params=variant_params(base, spec),
                    collections=scope.collections,
                )()
                runners[spec] = (run, close)
            times: dict[str, list[float]] = {s: [] for s in args.variants}
            recalls: dict[str, list[float]] = {s: [] for s in args.variants}
            exact: dict[str, int] = {s: 0 for s in args.variants}
            try:
                for n, q in enumerate(queries):
                    order = args.variants if n % 2 == 0 else list(reversed(args.variants))
                    for spec in order:
                        t0 = time.perf_counter()
                        rows = runners[spec][0](q)
                        times[spec].append((time.perf_counter() - t0) * 1000)
                        exact[spec] += bool(rows) and rows[0].get("scope_count") is not None
                        want = truths_match[n] if function == MATCH else truths_vec[n]
                        if not want:
                            continue
                        if function == MATCH:
                            got = {r["id"] for r in rows[:10]}
                        else:
                            got = {r["id"] for r in rows if (r.get("vector_rank") or 99) <= 10}
                        recalls[spec].append(len(got.intersection(want)) / len(want))
            finally:
                for _, close in runners.values():
                    close()
            for spec in args.variants:
                rec = {
                    "size": args.size,
                    "scope": scope.label,
                    "admitted": admitted,
                    "function": function,
                    "variant": spec,
                    "p50_ms": round(float(np.percentile(times[spec], 50)), 2),
                    "p95_ms": round(float(np.percentile(times[spec], 95)), 2),
                    "recall_at_10": round(float(np.mean(recalls[spec])), 3) if recalls[spec] else None,
                    "recall_queries": len(recalls[spec]),
                    "exact_share": round(exact[spec] / len(queries), 2),
                    "loadavg": os.getloadavg()[0],
                }
                out.append(rec)
                log(
                    f"  {scope.label:22s} {function:16s} {spec:28s} admitted {admitted:>9,}  "
                    f"p50 {rec['p50_ms']:>7}  p95 {rec['p95_ms']:>7} ms  recall@10 {rec['recall_at_10']}  "
                    f"exact {rec['exact_share']}  load {rec['loadavg']:.1f}"
                )
    return out


def render(records: list[dict[str, Any]]) -> str:
    lines = [
        "| scope | admitted | function | variant | p50 / p95 ms | recall@10 | exact share | load |",
        "|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(
            f"| {r['scope']} | {r['admitted']:,} | `{r['function']}` | {r['variant']} | {r['p50_ms']} / "
            f"{r['p95_ms']} | {r['recall_at_10']} | {r['exact_share']} | {r['loadavg']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run = run_record("bench.latency.tune")
    records = measure(args)
    write_records(run, args, "tune", records, render(records))


if __name__ == "__main__":
    main()
