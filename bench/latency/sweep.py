"""The selectivity sweep: hybrid_search and match_documents at c=1 over scopes of every size.

    .venv/bin/python -m bench.latency --sizes 100000 --selectivity 0.0001 0.001 0.01 0.1 0.5

A scope is one of
    unfiltered       no filter, as the tables' owner (the baseline of the same run)
    selectivity s    the filter {"sel": ["s"]}, which admits a share s of the chunks (the synthetic
                     corpus's "sel" metadata, bench/common/synthetic.py), as the tables' owner
    tenant-x%        no filter, as the signed-in user who owns x % of the documents, through row-level
                     security: the policies admit the public corpus (1 %) and the user's own chunks
    collection-x%    a member of a team collection holding about x % of the chunks, the search
                     narrowed to it (`collections: [id]`), through row-level security
    member-of-20     a user in 20 collections (0.05 % each): unnarrowed (the public corpus and the 20
                     collections, through RLS), and narrowed to the 20 (bench/latency/collections.py)
Each cell runs for --seconds-per-cell (or --max-queries-per-cell), one connection, the functions as
the product calls them (HybridParams.from_settings: the shipped exact_scan_threshold). Recall@10 of
each cell is measured against the same function on the same scope with the exact plan forced
(exact_scan_threshold above the scope: every admitted chunk's distance computed), in the same run,
under the same identity.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.connection import connect
from backend.retrieval.params import HYBRID, MATCH, HybridParams
from bench.common import log
from bench.common.synthetic import PUBLIC_SHARE, TENANT_SHARES, Query, tenant_id
from bench.latency.cells import CPU_KEYS, CellResult, RunnerFactory, run_cell, sql_runner
from bench.latency.collections import (
    COLLECTION_SHARES,
    MEMBER_OF_20,
    TEAM_SHARE,
    TEAMS,
    collection_id,
    member_of,
    team_names,
)

# The unfiltered scope's exact truth: a filter every chunk passes, so that the functions take the scope
# path (an empty filter without RLS has no scope to rank exactly).
EVERY_CHUNK = {"created_at": {"$gte": "1900-01-01"}}
EXACT_THRESHOLD = 1_000_000  # the largest the functions accept: the exact plan up to 1M admitted chunks
RECALL_K = 10


@dataclass(frozen=True)
class Scope:
    label: str  # "unfiltered", "selectivity 0.01", "tenant-1%"
    filter: dict[str, Any]
    identity: Identity | None  # None: the tables' owner (no RLS)
    selectivity: float | None = None  # the share of chunks the filter admits by construction
    tenant_share: float | None = None  # the share of documents the tenant owns
    collections: list[uuid.UUID] | None = None  # the search narrowed to these team collections
    collection_share: float | None = None  # the share of chunks the collection(s) hold by construction


def tenant_identity(name: str) -> Identity:
    user = tenant_id(name)
    return Identity(
        user_id=user,
        role="authenticated",
        claims={"sub": str(user), "role": "authenticated", "aud": "authenticated"},
    )


def scopes(selectivities: Sequence[float], tenants: bool = True) -> list[Scope]:
    out = [Scope("unfiltered", {}, None)]
    out += [Scope(f"selectivity {s:g}", {"sel": [str(s)]}, None, selectivity=s) for s in selectivities]
    if tenants:
        out += [
            Scope(name, {}, tenant_identity(name), tenant_share=share)
            for name, share in TENANT_SHARES.items()
        ]
        out += [
            Scope(
                name,
                {},
                tenant_identity(member_of(name)),
                collections=[collection_id(name)],
                collection_share=share,
            )
            for name, share in COLLECTION_SHARES.items()
        ]
        teams = [collection_id(n) for n in team_names()]
        twenty = TEAMS * TEAM_SHARE
        out += [
            Scope(MEMBER_OF_20, {}, tenant_identity(MEMBER_OF_20), collection_share=twenty),
            Scope(
                f"{MEMBER_OF_20} narrowed",
                {},
                tenant_identity(MEMBER_OF_20),
                collections=teams,
                collection_share=twenty,
            ),
        ]
    return out


def admitted(url: str, scope: Scope) -> int:
    """How many chunks the scope admits, counted as the tables' owner."""
    with connect(url, autocommit=True) as conn:
        if scope.collections is not None:
            row = conn.execute(
                "select count(*) from public.chunks where collection_id = any(%s)", (scope.collections,)
            ).fetchone()
        elif scope.identity is not None:
            row = conn.execute(
                "select count(*) from public.chunks c where c.visibility = 'public' or c.owner_id = %s or "
                "c.collection_id in (select m.collection_id from collection_members m where m.user_id = %s)",
                (scope.identity.user_id, scope.identity.user_id),
            ).fetchone()
        elif scope.filter:
            row = conn.execute(
                "select count(*) from public.chunks where metadata @> %s::jsonb",
                (psycopg.types.json.Jsonb(scope.filter),),
            ).fetchone()
        else:
            row = conn.execute("select count(*) from public.chunks").fetchone()
    return int(row[0]) if row else 0


IO_STATS = """
    select t.heap_blks_read, t.heap_blks_hit, coalesce(t.toast_blks_read, 0), coalesce(t.toast_blks_hit, 0),
           i.idx_blks_read, i.idx_blks_hit
    from pg_statio_user_tables t, pg_statio_user_indexes i
    where t.relid = 'public.chunks'::regclass and i.indexrelname = 'chunks_embedding_384_hnsw_idx'
"""
IO_FIELDS = ("heap_read", "heap_hit", "toast_read", "toast_hit", "hnsw_read", "hnsw_hit")


def io_counters(url: str) -> tuple[int, ...]:
    """Blocks of chunks (heap, TOAST) and its 384-d HNSW index read from outside / found in shared_buffers."""
    with connect(url, autocommit=True) as conn:
        conn.execute("select pg_stat_clear_snapshot()")
        row = conn.execute(IO_STATS).fetchone()
    return tuple(int(x) for x in row) if row else (0,) * len(IO_FIELDS)


def io_per_query(url: str, before: tuple[int, ...], queries: int) -> dict[str, float]:
    """Per query of the cell: shared_buffers misses and hits (counters flush within ~1 s of idle)."""
    time.sleep(1.2)
    after = io_counters(url)
    return {
        f"io_{k}": round((a - b) / max(queries, 1), 1)
        for k, a, b in zip(IO_FIELDS, after, before, strict=True)
    }


def recall(
    url: str, settings: Settings, model: str, case: str, scope: Scope, queries: Sequence[Query]
) -> dict[str, Any]:
    """Recall@10 of the planned call against the exact plan, and how often the planned call was exact."""
    exact_params = dataclasses.replace(
        HybridParams.from_settings(settings), exact_scan_threshold=EXACT_THRESHOLD
    )
    # The unfiltered scope has no scope to rank exactly without a filter: one every chunk passes.
    truth_tree = EVERY_CHUNK if not scope.filter and scope.identity is None else scope.filter
    planned_run, close_planned = sql_runner(
        url,
        settings,
        model,
        case,
        False,
        identity=scope.identity,
        tree=scope.filter,
        collections=scope.collections,
    )()
    exact_run, close_exact = sql_runner(
        url,
        settings,
        model,
        case,
        False,
        identity=scope.identity,
        tree=truth_tree,
        params=exact_params,
        collections=scope.collections,
    )()
    recalls: list[float] = []
    exact_taken = answered = truth_exact = truths = 0
    exact_ms: list[float] = []
    try:
        for q in queries:
            planned = planned_run(q)
            started = time.perf_counter()
            truth = exact_run(q)
            exact_ms.append((time.perf_counter() - started) * 1000)
            if truth:  # match_documents may return nothing above its similarity floor
                truths += 1
                truth_exact += truth[0].get("scope_count") is not None
            if planned:  # scope_count: the size of the scope when the planner ranked it exactly, else null
                answered += 1
                exact_taken += planned[0].get("scope_count") is not None
            want = [r["id"] for r in truth[:RECALL_K]]
            if want:
                got = {r["id"] for r in planned[:RECALL_K]}
                recalls.append(len(got.intersection(want)) / len(want))
    finally:
        close_planned()
        close_exact()
    return {
        "recall_at_10": round(float(np.mean(recalls)), 3) if recalls else None,
        "recall_queries": len(recalls),
        "exact_plan_share": round(exact_taken / answered, 2) if answered else None,
        "exact_p50_ms": round(float(np.median(exact_ms)), 2) if exact_ms else None,
        # the truth must come from the exact plan: anything else would make recall meaningless
        "truth_exact_share": round(truth_exact / truths, 2) if truths else None,
    }


def run_sweep(
    url: str,
    settings: Settings,
    model: str,
    queries: Sequence[Query],
    *,
    size: int,
    selectivities: Sequence[float],
    seconds: float,
    max_queries: int,
    recall_queries: int,
    tenants: bool = True,
    concurrency: Sequence[int] = (1,),
) -> list[dict[str, Any]]:
    """One record per (scope, function): {size, scope, selectivity, admitted, function, p50_ms, p95_ms,
    recall_at_10, ...}."""
    records: list[dict[str, Any]] = []
    pending: list[tuple[Scope, int, dict[str, Any], str, int]] = []
    unfiltered: dict[str, RunnerFactory] = {}  # the baseline's runners, measured again after each scope
    before: dict[str, float] = {}  # the unfiltered p95 measured just before the scope's cells
    for scope in scopes(selectivities, tenants):
        count = admitted(url, scope)
        for case in (HYBRID, MATCH):
            factory = sql_runner(
                url,
                settings,
                model,
                case,
                False,
                identity=scope.identity,
                tree=scope.filter,
                collections=scope.collections,
            )
            io_before = io_counters(url)
            cell: CellResult = run_cell(
                case,
                factory,
                queries,
                filtered=bool(scope.filter or scope.identity),
                concurrency=1,
                seconds=seconds,
                max_queries=max_queries,
            )
            s = cell.summary()
            io = io_per_query(url, io_before, s["queries"])
            if scope.label == "unfiltered":
                unfiltered[case], before[case] = factory, s["p95_ms"]
            wider = {}
            for c in (c for c in concurrency if c > 1):  # throughput: c connections, closed loop
                more = run_cell(
                    case,
                    factory,
                    queries,
                    filtered=bool(scope.filter or scope.identity),
                    concurrency=c,
                    seconds=seconds,
                    max_queries=max_queries,
                ).summary()
                wider.update(
                    {f"qps_c{c}": more["qps"], f"p95_ms_c{c}": more["p95_ms"], f"errors_c{c}": more["errors"]}
                    | {f"{k}_c{c}": more[k] for k in CPU_KEYS}
                )
            # the exact truth of a scope of 200k+ chunks costs seconds per question (1M: ~10 s): half
            truth_queries = recall_queries if count <= 200_000 else max(5, recall_queries // 2)
            record = {
                "size": size,
                "scope": scope.label,
                "selectivity": scope.selectivity,
                "tenant_share": scope.tenant_share,
                "collection_share": scope.collection_share,
                "narrowed_to": len(scope.collections) if scope.collections is not None else None,
                "public_share": PUBLIC_SHARE if scope.identity else None,
                "rls": scope.identity is not None,
                "admitted": count,
                "function": case,
                "queries": s["queries"],
                "p50_ms": s["p50_ms"],
                "p95_ms": s["p95_ms"],
                "p99_ms": s["p99_ms"],
                "errors": s["errors"],
                "first_error": s["first_error"],
                "qps": s["qps"],
                **{k: s[k] for k in CPU_KEYS},
                **io,
                **wider,
                "loadavg_after": s["loadavg_after"],
            }
            pending.append((scope, count, record, case, truth_queries))
            log(
                f"  sweep {scope.label:18s} {case:16s} admitted {count:>8,}  p50 {s['p50_ms']}  "
                f"p95 {s['p95_ms']} ms  errors {s['errors']}  misses/q heap {io['io_heap_read']} "
                f"toast {io['io_toast_read']} hnsw {io['io_hnsw_read']}  {wider}"
            )
        if scope.label != "unfiltered" and unfiltered:
            before = bracket_baseline(pending[-2:], unfiltered, before, queries, seconds / 2, max_queries)
    # The exact truths run after every cell: at 1M a truth reads every admitted chunk's vector through
    # shared_buffers and evicted the HNSW graph the next cells walked (1,164 HNSW blocks read per
    # match_documents query right after the unfiltered truth; 11,000 per hybrid_search query of the
    # next HNSW scope, selectivity 0.01, when the truths ran after each scope's cells).
    for scope, count, record, case, truth_queries in pending:
        quality = recall(url, settings, model, case, scope, queries[:truth_queries])
        record.update(quality)
        log(
            f"  recall {scope.label:18s} {case:16s} admitted {count:>8,}  recall@10 {quality['recall_at_10']}"
            f"  exact plan {quality['exact_plan_share']}"
        )
        records.append(record)
    base = {r["function"]: r["p95_ms"] for r in records if r["scope"] == "unfiltered"}
    for r in records:
        baseline = r.get("baseline_p95_ms") or base.get(r["function"])
        r["p95_over_unfiltered"] = round(r["p95_ms"] / baseline, 2) if baseline else None
    return records


def bracket_baseline(
    scope_cells: list[tuple[Scope, int, dict[str, Any], str, int]],
    unfiltered: dict[str, RunnerFactory],
    before: dict[str, float],
    queries: Sequence[Query],
    seconds: float,
    max_queries: int,
) -> dict[str, float]:
    """The unfiltered cells run again (c=1, for `seconds`) right after a scope's cells; each of the
    scope's records gets baseline_p95_ms, the mean of the unfiltered p95 measured just before and just
    after it, which its ratio uses. This machine's speed drifts by up to 1.6 x within minutes: with one
    baseline at the start of a 12-minute sweep, the ratio of a late cell measured the drift (member-of-20
    `match_documents` 1.73-2.37 x in three runs of the same code). Returns the `after` p95s, the next
    scope's `before`."""
    after = {
        case: run_cell(
            case, factory, queries, filtered=False, concurrency=1, seconds=seconds, max_queries=max_queries
        ).summary()["p95_ms"]
        for case, factory in unfiltered.items()
    }
    for _, _, record, case, _ in scope_cells:
        record["baseline_p95_ms"] = round((before[case] + after[case]) / 2, 2)
    return after


def render_sweep(records: list[dict[str, Any]], seconds: float) -> list[str]:
    if not records:
        return []
    header = [
        "| scope | admitted chunks | function | p50 ms | p95 ms | p95 / unfiltered | recall@10 "
        "| exact plan |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    rows = [
        f"| {r['scope']} | {r['admitted']:,} | `{r['function']}` | {r['p50_ms']} | {r['p95_ms']} | "
        f"{r['p95_over_unfiltered']}× | {r['recall_at_10']} | {r['exact_plan_share']} |"
        for r in records
    ]
    return [
        "## Selectivity sweep",
        f"c=1, {seconds:g} s per cell; recall@10 against the same function with the exact plan forced, "
        'same scope and identity, same run. `selectivity s`: the filter `{"sel": ["s"]}` as the tables\' '
        f"owner; `tenant-x%`: a signed-in user owning x % of the documents, through RLS (public corpus "
        f"{PUBLIC_SHARE:.0%}); `collection-x%`: a member of a team collection holding about x % of the "
        "chunks, narrowed to it; `member-of-20`: a user in 20 collections (0.05 % each), unnarrowed "
        "(public corpus + the 20) and narrowed to the 20; exact plan: the share of the recall queries the "
        "planner ranked exactly; p95 / unfiltered: against the unfiltered p95 measured just before and "
        "just after the scope's cells (their mean).",
        "\n".join(header + rows),
    ]
