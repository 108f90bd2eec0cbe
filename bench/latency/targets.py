"""Every cell of a selectivity sweep against issue 31's targets, as a Markdown table.

    python -m bench.latency.targets bench/results/latency-1000000.json

Targets (2 cores, 1M × 384-d): unfiltered `hybrid_search` p95 ≤ 25 ms; every scoped cell p95 ≤ 30 ms
for scopes up to 2 % of the corpus and ≤ 60 ms for all, and ≤ 2× the unfiltered p95 of the same
function in the same run; recall@10 ≥ 0.95 in every cell; throughput at c=8 at least 1.7× c=1.
The unfiltered p95 a cell is compared with is the one the sweep measured around it (baseline_p95_ms:
the mean of the unfiltered cells run just before and just after the scope's cells) when the report
has it, else the unfiltered cell's own.

The sweep measures recall on its --sweep-recall-queries questions a cell (20 in the documented runs),
where one question that the walk loses moves it by 0.05. `--recall bench/results/tune-<size>-<label>.json`
(one or more reports; where two measured a cell, the later one given counts) takes `match_documents`'
recall@10 from a `bench.latency.tune` run instead (a brute-force truth, as many questions as it ran:
the same measure, on more questions), for the cells it measured at the product's default ef_search;
the table says how many questions each figure rests on. Tune measures `hybrid_search`'s vector leg, the
sweep its fused top 10: a `bench.latency.recall` report (the sweep's measure on more questions) gives
both functions'.

    python -m bench.latency.targets run-a.json run-b.json run-c.json

Several reports of the same size: each cell's p95 / unfiltered in every run and their median, judged
on the median (p95 bound and ratio; recall and c=8 as in the last run). On this machine a burst of
slowness can make one 8-second cell 1.5-2 x slower than the cells measured around it: one run's
verdict on a cell near the bound is a coin toss, the median of several is not.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench.common import bench_settings


def baseline(r: dict[str, Any], unfiltered_p95: dict[str, float]) -> float | None:
    """The unfiltered p95 the cell's ratio uses: measured around it, or the run's unfiltered cell."""
    return r.get("baseline_p95_ms") or unfiltered_p95.get(r["function"])


def verdict(r: dict[str, Any], unfiltered_p95: dict[str, float]) -> list[str]:
    """The targets the cell misses (empty: met)."""
    missed = []
    share = r["admitted"] / r["size"] if r.get("size") else 1.0
    if r["scope"] == "unfiltered":
        if r["function"] == "hybrid_search" and r["p95_ms"] > 25:
            missed.append("p95 > 25 ms")
    else:
        bound = 30 if share <= 0.02 else 60
        if r["p95_ms"] > bound:
            missed.append(f"p95 > {bound} ms")
        base = baseline(r, unfiltered_p95)
        if base and r["p95_ms"] > 2 * base:
            missed.append(f"{r['p95_ms'] / base:.1f}× unfiltered")
    if r.get("recall_at_10") is not None and r["recall_at_10"] < 0.95:
        missed.append("recall < 0.95")
    if r.get("qps") and r.get("qps_c8") and r["qps_c8"] < 1.7 * r["qps"]:
        missed.append(f"c=8 {r['qps_c8'] / r['qps']:.2f}× c=1{cores(r)}")
    return missed


def cores(r: dict[str, Any]) -> str:
    """Where the processor time went at c=8, when the sweep measured it: the cores busy and the client's
    share of each query's time (the client runs on the same machine as the server)."""
    busy, client, server = (r.get(f"{k}_c8") for k in ("busy_cores", "client_cpu_ms", "server_cpu_ms"))
    if busy is None or client is None or server is None:
        return ""
    return f" ({busy:.1f} cores busy; client {client:.2f} + server {server:.2f} ms CPU a query)"


def with_recall(records: list[dict[str, Any]], tune: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    """The sweep's records, recall taken from a report of more questions where it has the cell at
    `variant`: a tune report's match_documents (its vector leg is not hybrid_search's fused top 10),
    a bench.latency.recall report's both functions (the sweep's own measure)."""
    better = {
        (r["scope"], r["function"]): r
        for r in tune["records"]
        if (r["function"] == "match_documents" or r.get("truth") == "exact plan")
        and r["variant"] == variant
        and r.get("recall_at_10") is not None
    }
    out = []
    for r in records:
        t = better.get((r["scope"], r["function"]))
        if t is not None:
            r = {**r, "recall_at_10": t["recall_at_10"], "recall_queries": t["recall_queries"]}
        out.append(r)
    return out


def render(records: list[dict[str, Any]]) -> str:
    unfiltered = {r["function"]: r["p95_ms"] for r in records if r["scope"] == "unfiltered"}
    lines = [
        "| scope | function | admitted | p50 / p95 ms | p95 / unfiltered | recall@10 | exact | QPS c=1 / c=8 "
        "| misses per query: heap / TOAST / HNSW | targets |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        missed = verdict(r, unfiltered)
        base = baseline(r, unfiltered)
        ratio = f"{r['p95_ms'] / base:.2f}×" if base else "—"
        io = " / ".join(str(r.get(f"io_{k}_read", "—")) for k in ("heap", "toast", "hnsw"))
        recall = r.get("recall_at_10")
        if recall is not None and r.get("recall_queries", 0) > 20:
            recall = f"{recall} ({r['recall_queries']} q)"
        lines.append(
            f"| {r['scope']} | `{r['function']}` | {r['admitted']:,} | {r['p50_ms']} / {r['p95_ms']} "
            f"| {ratio} "
            f"| {recall if recall is not None else '—'} | {r.get('exact_plan_share', '—')} "
            f"| {r.get('qps', '—')} / {r.get('qps_c8', '—')} | {io} "
            f"| {'met' if not missed else 'missed: ' + ', '.join(missed)} |"
        )
    return "\n".join(lines) + "\n"


def render_runs(runs: list[list[dict[str, Any]]]) -> str:
    """One row per cell: p95 / unfiltered in each run, the median, and the targets judged on it."""
    unfiltered = [{r["function"]: r["p95_ms"] for r in run if r["scope"] == "unfiltered"} for run in runs]
    cells = {(r["scope"], r["function"]): r for r in runs[-1]}
    lines = [
        "| scope | function | p95 ms per run | p95 / unfiltered per run | median ratio | targets (median) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for key, last in cells.items():
        same = [next((r for r in run if (r["scope"], r["function"]) == key), None) for run in runs]
        present = [(r, base) for r, base in zip(same, unfiltered, strict=True) if r is not None]
        ratios = [r["p95_ms"] / (baseline(r, base) or r["p95_ms"]) for r, base in present]
        p95 = statistics.median(r["p95_ms"] for r, _ in present)
        # judged on the median p95 and the median ratio (the baseline that gives it)
        median_cell = {**last, "p95_ms": p95, "baseline_p95_ms": p95 / statistics.median(ratios)}
        missed = verdict(median_cell, {})
        lines.append(
            f"| {key[0]} | `{key[1]}` | {' / '.join(str(r['p95_ms']) for r, _ in present)} "
            f"| {' / '.join(f'{x:.2f}×' for x in ratios)} | {statistics.median(ratios):.2f}× "
            f"| {'met' if not missed else 'missed: ' + ', '.join(missed)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, nargs="+", help="one sweep report, or several of one size")
    parser.add_argument(
        "--recall",
        type=Path,
        nargs="+",
        default=[],
        help="bench.latency.tune or bench.latency.recall reports (a later report's cell wins)",
    )
    parser.add_argument(
        "--recall-variant",
        default=f"ef={bench_settings().rag_hnsw_ef_search}",
        help="the tune variant that is the product's default (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    runs = [json.loads(path.read_text(encoding="utf-8"))["sweep"] for path in args.report]
    for path in args.recall:
        tune = json.loads(path.read_text(encoding="utf-8"))
        runs = [with_recall(records, tune, args.recall_variant) for records in runs]
    print(render(runs[0]) if len(runs) == 1 else render_runs(runs), end="")


if __name__ == "__main__":
    main()
