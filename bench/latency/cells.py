"""Closed-loop latency cells: N threads, each with its own connection or HTTP client, for a bounded time.

Every worker opens its client, runs a couple of unrecorded warm-up queries, waits for the others at
a barrier, then loops over the shared query list until the cell's deadline or query budget. A cell
reports p50/p95/p99 latency and QPS (completed queries / wall time of the measured window), and where
the machine's processor time went in that window: the cores busy (/proc/stat) and the share of it this
process — the client — spent, per query (the rest is the server's, and anything else running).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import psycopg

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.connection import connect
from backend.db.identity import apply_identity
from backend.db.repositories import retrieval as retrieval_repo
from backend.retrieval.params import HYBRID, HybridParams
from bench.common import supabase_ref
from bench.common.synthetic import Query
from bench.latency.server import BENCH_SERVICE_KEY

RARE_FILTER = {"bucket": "rare"}
CPU_KEYS = ("busy_cores", "client_cpu_ms", "server_cpu_ms")  # CellResult.summary()'s processor time
WARMUP_QUERIES = 1

Runner = Callable[[Query], Any]
RunnerFactory = Callable[[], tuple[Runner, Callable[[], None]]]


@dataclass
class CellResult:
    case: str
    filtered: bool
    concurrency: int
    latencies_ms: list[float] = field(default_factory=list)
    query_index: list[int] = field(default_factory=list)
    wall_seconds: float = 0.0
    errors: int = 0
    first_error: str | None = None
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    stages: list[dict[str, float]] = field(default_factory=list)  # server-side stage times, when known
    client_cpu_seconds: float | None = None  # this process's processor time in the window
    busy_cpu_seconds: float | None = None  # the machine's, every core (None without /proc/stat)

    def summary(self) -> dict[str, Any]:
        lat = np.array(self.latencies_ms) if self.latencies_ms else np.array([np.nan])
        p50, p95, p99 = (float(np.percentile(lat, q)) for q in (50, 95, 99))
        n = len(self.latencies_ms)
        cpu: dict[str, float | None] = dict.fromkeys(CPU_KEYS)
        if self.busy_cpu_seconds is not None and self.client_cpu_seconds is not None and n:
            busy, client = self.busy_cpu_seconds, self.client_cpu_seconds
            cpu = {
                "busy_cores": round(busy / self.wall_seconds, 2) if self.wall_seconds else None,
                "client_cpu_ms": round(client * 1000 / n, 3),
                "server_cpu_ms": round(max(busy - client, 0.0) * 1000 / n, 3),
            }
        return {
            "case": self.case,
            "filter": "bucket=rare" if self.filtered else None,
            "concurrency": self.concurrency,
            "queries": len(self.latencies_ms),
            "seconds": round(self.wall_seconds, 2),
            "qps": round(len(self.latencies_ms) / self.wall_seconds, 2) if self.wall_seconds else None,
            "p50_ms": round(p50, 2),
            "p95_ms": round(p95, 2),
            "p99_ms": round(p99, 2),
            "mean_ms": round(float(np.mean(lat)), 2),
            "errors": self.errors,
            "first_error": self.first_error,
            "loadavg_before": [round(x, 2) for x in self.load_before],
            "loadavg_after": [round(x, 2) for x in self.load_after],
            # processor time per completed query, in the measured window: the client's (this process)
            # and the rest of the machine's (the server's); busy_cores of os.cpu_count()
            **cpu,
            "server_stage_p50_ms": {
                k: round(float(np.median([s[k] for s in self.stages if k in s])), 2)
                for k in dict.fromkeys(k for s in self.stages for k in s)
            },
        }


def run_cell(
    case: str,
    open_runner: RunnerFactory,
    queries: Sequence[Query],
    *,
    filtered: bool,
    concurrency: int,
    seconds: float,
    max_queries: int,
    extract: Callable[[Any], dict[str, float]] | None = None,
) -> CellResult:
    """`concurrency` workers, each from open_runner() -> (run, close), until seconds or max_queries."""
    result = CellResult(case, filtered, concurrency)
    counter = itertools.count()
    lock = threading.Lock()
    window: dict[str, Any] = {}

    def open_window() -> None:  # run by the last worker to reach the barrier, before any is released
        window["cpu"], window["busy"] = time.process_time(), busy_cpu_seconds()
        window["start"] = time.perf_counter()
        window["deadline"] = window["start"] + seconds

    barrier = threading.Barrier(concurrency, action=open_window)

    def worker(w: int) -> None:
        try:
            run, close = open_runner()
        except Exception as exc:  # noqa: BLE001 - reported in the cell, the others go on
            _record_error(result, lock, exc)
            barrier.abort()
            return
        try:
            for i in range(WARMUP_QUERIES):
                run(queries[(w * 7 + i) % len(queries)])
            barrier.wait(timeout=300)
            while True:
                n = next(counter)
                if n >= max_queries or time.perf_counter() >= window["deadline"]:
                    break
                qi = n % len(queries)
                started = time.perf_counter()
                try:
                    returned = run(queries[qi])
                except Exception as exc:  # noqa: BLE001
                    _record_error(result, lock, exc)
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                stages = extract(returned) if extract else None  # outside the timed window
                with lock:
                    result.latencies_ms.append(elapsed)
                    result.query_index.append(qi)
                    if stages:
                        result.stages.append(stages)
        except threading.BrokenBarrierError:
            pass
        finally:
            close()
            window["last"] = max(window.get("last", 0.0), time.perf_counter())

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(concurrency)]
    result.load_before = os.getloadavg()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if "start" in window:
        result.wall_seconds = window.get("last", window["start"]) - window["start"]
        busy = busy_cpu_seconds()
        result.client_cpu_seconds = time.process_time() - window["cpu"]
        if busy is not None and window["busy"] is not None:
            result.busy_cpu_seconds = busy - window["busy"]
    result.load_after = os.getloadavg()
    return result


def busy_cpu_seconds(stat: str = "/proc/stat") -> float | None:
    """Processor time every core of the machine has spent busy since boot (all but idle and iowait), or
    None where there is no /proc/stat."""
    try:
        with open(stat, encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is already counted in user)
    ticks = [int(x) for x in fields[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _record_error(result: CellResult, lock: threading.Lock, exc: Exception) -> None:
    with lock:
        result.errors += 1
        result.first_error = result.first_error or f"{type(exc).__name__}: {exc}"[:300]


# --- the runners ------------------------------------------------------------------------------------


def product_call(
    settings: Settings,
    model: str,
    case: str,
    filtered: bool = False,
    tree: dict[str, Any] | None = None,
    params: HybridParams | None = None,
    collections: list[uuid.UUID] | None = None,
) -> Callable[[psycopg.Connection, Query], Any]:
    """(conn, question) -> rows: the product's repository function for `case` on a connection given,
    with the prefetch size, filter, model, parameters and narrowing a search passes.

    tree: a filter other than RARE_FILTER (filtered is then ignored). params: other than the settings'.
    collections: narrow every call to these team collections (issue 27).
    """
    common: dict[str, Any] = {
        "match_count": settings.rag_prefetch_k,
        "filter": tree if tree is not None else RARE_FILTER if filtered else {},
        "embedding_model": model,
        "params": params or HybridParams.from_settings(settings),
        "collections": collections,
    }

    def call(conn: psycopg.Connection, q: Query) -> Any:
        if case == HYBRID:
            return retrieval_repo.hybrid_search(conn, query_text=q.terms, query_embedding=q.vector, **common)
        return retrieval_repo.match_documents(conn, query_embedding=q.vector, **common)

    return call


def sql_runner(
    url: str,
    settings: Settings,
    model: str,
    case: str,
    filtered: bool,
    identity: Identity | None = None,
    tree: dict[str, Any] | None = None,
    params: HybridParams | None = None,
    collections: list[uuid.UUID] | None = None,
) -> RunnerFactory:
    """A factory of (run, close) pairs calling the product's repository functions (product_call) on own
    connections.

    identity None: as the tables' owner (no row-level security). An identity: each call in its own
    transaction as that user, exactly as the API runs it (backend.db.identity), so RLS applies.
    """
    call = product_call(settings, model, case, filtered, tree, params, collections)

    def open_runner() -> tuple[Runner, Callable[[], None]]:
        conn = connect(url, autocommit=True)

        def run(q: Query) -> Any:
            if identity is None:
                return call(conn, q)
            with conn.transaction():
                apply_identity(conn, identity, statement_timeout_ms=settings.db_statement_timeout_ms)
                return call(conn, q)

        return run, conn.close

    return open_runner


def supabase_runner(
    url: str, match_count: int, dims: int, function: supabase_ref.GuideFunction = "hybrid_search"
) -> RunnerFactory:
    """The guide's hybrid_search (or its indexed rewrite) on the raw question, as
    bench/common/supabase_ref.py calls it."""

    def open_runner() -> tuple[Runner, Callable[[], None]]:
        conn = supabase_ref.open_connection(url)

        def run(q: Query) -> Any:
            return supabase_ref.search(
                conn,
                query_text=q.text,
                query_embedding=q.vector,
                match_count=match_count,
                dims=dims,
                function=function,
            )

        return run, conn.close

    return open_runner


def http_runner(base_url: str, filtered: bool) -> RunnerFactory:
    """POST /search with the product's defaults (hybrid, dynamic top-k), one httpx client per worker."""

    def open_runner() -> tuple[Runner, Callable[[], None]]:
        # The service key: every chunk readable, as on the owner-side SQL cells (bench/latency/server.py).
        headers = {"Authorization": f"Bearer {BENCH_SERVICE_KEY}"}
        client = httpx.Client(base_url=base_url, timeout=120, headers=headers)

        def run(q: Query) -> Any:
            body: dict[str, Any] = {"query": q.text}
            if filtered:
                body["filters"] = RARE_FILTER
            response = client.post("/search", json=body)
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            return response

        return run, client.close

    return open_runner


def search_stages(response: httpx.Response) -> dict[str, float]:
    """The stage times /search reports in its diagnostics (embedding, prefetch, rerank, ...)."""
    diag = response.json().get("diagnostics", {})
    out = {
        f"{name}_ms": float(stage["ms"])
        for name, stage in diag.get("stages", {}).items()
        if isinstance(stage, dict) and "ms" in stage
    }
    if "total_ms" in diag:
        out["total_ms"] = float(diag["total_ms"])
    return out
