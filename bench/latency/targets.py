"""Every cell of a selectivity sweep against issue 31's targets, as a Markdown table.

    python -m bench.latency.targets bench/results/latency-1000000.json

Targets (2 cores, 1M × 384-d): unfiltered `hybrid_search` p95 ≤ 25 ms; every scoped cell p95 ≤ 30 ms
for scopes up to 2 % of the corpus and ≤ 60 ms for all, and ≤ 2× the unfiltered p95 of the same
function in the same run; recall@10 ≥ 0.95 in every cell; throughput at c=8 at least 1.7× c=1.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


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
        base = unfiltered_p95.get(r["function"])
        if base and r["p95_ms"] > 2 * base:
            missed.append(f"{r['p95_ms'] / base:.1f}× unfiltered")
    if r.get("recall_at_10") is not None and r["recall_at_10"] < 0.95:
        missed.append("recall < 0.95")
    if r.get("qps") and r.get("qps_c8") and r["qps_c8"] < 1.7 * r["qps"]:
        missed.append(f"c=8 {r['qps_c8'] / r['qps']:.2f}× c=1")
    return missed


def render(records: list[dict[str, Any]]) -> str:
    unfiltered = {r["function"]: r["p95_ms"] for r in records if r["scope"] == "unfiltered"}
    lines = [
        "| scope | function | admitted | p50 / p95 ms | p95 / unfiltered | recall@10 | exact | QPS c=1 / c=8 "
        "| misses per query: heap / TOAST / HNSW | targets |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        missed = verdict(r, unfiltered)
        base = unfiltered.get(r["function"])
        ratio = f"{r['p95_ms'] / base:.2f}×" if base else "—"
        io = " / ".join(str(r.get(f"io_{k}_read", "—")) for k in ("heap", "toast", "hnsw"))
        recall = r.get("recall_at_10")
        lines.append(
            f"| {r['scope']} | `{r['function']}` | {r['admitted']:,} | {r['p50_ms']} / {r['p95_ms']} "
            f"| {ratio} "
            f"| {recall if recall is not None else '—'} | {r.get('exact_plan_share', '—')} "
            f"| {r.get('qps', '—')} / {r.get('qps_c8', '—')} | {io} "
            f"| {'met' if not missed else 'missed: ' + ', '.join(missed)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    args = parser.parse_args(argv)
    print(render(json.loads(args.report.read_text(encoding="utf-8"))["sweep"]), end="")


if __name__ == "__main__":
    main()
