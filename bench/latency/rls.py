"""What row-level security costs the SQL functions: each query run as the tables' owner and as a
signed-in user, back to back in alternating order, so both see the same machine load (a noisy machine
makes separate cells incomparable).

The user is the bench tenant owning 10 % of the documents; RLS admits its own chunks and the public
corpus. The owner side reads the same rows through the filter {"readers": [tenant]} (the synthetic
corpus records on every chunk which bench tenants may read it), so both sides rank the same scope.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from backend.auth import LOCAL_IDENTITY
from backend.config import Settings
from backend.db.connection import connect
from backend.db.identity import apply_identity
from backend.retrieval.params import HYBRID, MATCH
from bench.common.synthetic import Query
from bench.latency.cells import sql_runner
from bench.latency.sweep import tenant_identity

RLS_TENANT = "tenant-10%"


def paired_rls(
    url: str, settings: Settings, model: str, queries: Sequence[Query], *, rounds: int = 3
) -> list[dict[str, Any]]:
    """Per function: owner and user p50/p95 over the same queries, and the ratio; plus the cost of the
    transaction and identity statements alone (what every request pays before its first query)."""
    out = []
    for case in (HYBRID, MATCH):
        owner, close_owner = sql_runner(url, settings, model, case, False, tree={"readers": [RLS_TENANT]})()
        user, close_user = sql_runner(
            url, settings, model, case, False, identity=tenant_identity(RLS_TENANT)
        )()
        try:
            owner_ms: list[float] = []
            user_ms: list[float] = []
            for i, q in enumerate([q for _ in range(rounds) for q in queries]):
                first, second = (
                    ((owner, owner_ms), (user, user_ms)) if i % 2 else ((user, user_ms), (owner, owner_ms))
                )
                for run, sink in (first, second):
                    started = time.perf_counter()
                    run(q)
                    sink.append((time.perf_counter() - started) * 1000)
        finally:
            close_owner()
            close_user()
        out.append(_row(case, np.array(owner_ms), np.array(user_ms)))
    out.append({"function": "transaction + identity only", **_identity_overhead(url, settings)})
    return out


def _row(case: str, owner: np.ndarray, user: np.ndarray) -> dict[str, Any]:
    o50, o95, u50, u95 = (float(np.percentile(a, q)) for a in (owner, user) for q in (50, 95))
    return {
        "function": case,
        "queries": len(owner),
        "owner_p50_ms": round(o50, 2),
        "owner_p95_ms": round(o95, 2),
        "user_p50_ms": round(u50, 2),
        "user_p95_ms": round(u95, 2),
        "p50_ratio": round(u50 / o50, 2) if o50 else None,
        "p95_ratio": round(u95 / o95, 2) if o95 else None,
    }


def _identity_overhead(url: str, settings: Settings, n: int = 500) -> dict[str, Any]:
    with connect(url, autocommit=True) as conn:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            with conn.transaction():
                apply_identity(conn, LOCAL_IDENTITY, statement_timeout_ms=settings.db_statement_timeout_ms)
            times.append((time.perf_counter() - started) * 1000)
    return {"queries": n, "user_p50_ms": round(float(np.median(times)), 3)}
