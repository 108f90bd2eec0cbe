"""One table across sizes from bench/latency's JSON reports: the headline figures and the sizing facts.

Usage: .venv/bin/python -m bench.latency.summary [bench/results/latency-100000.json ...]
       (default: every bench/results/latency-*.json)

Prints Markdown: per size, load and HNSW build time, bytes per chunk (table + TOAST + indexes, and the
HNSW index alone), hybrid_search / match_documents / POST /search latency at concurrency 1, QPS at
1 and 8 and their ratio, ours against the Supabase guide's function, and recall@10 at the defaults.
docs/benchmarks.md and docs/scaling.md quote this table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR
from bench.common.report import markdown_table
from bench.latency.report import cell


def bytes_per_chunk(report: dict[str, Any]) -> tuple[float, float]:
    """(chunks table + TOAST + its indexes, the HNSW index of the report's dimension) per chunk."""
    chunks = next(t for t in report["sizes"]["tables"] if t["table"] == "public.chunks")
    rows = max(chunks["rows"], 1)
    hnsw = sum(
        i["bytes"] for i in report["sizes"]["indexes"] if "hnsw" in i["index"] and "public." in i["index"]
    )
    return chunks["total"] / rows, hnsw / rows


def recall_at_default(report: dict[str, Any], filtered: bool, ef: int) -> Any:
    want = "bucket=rare" if filtered else None
    row = next((r for r in report["recall"] if r.get("filter") == want and r.get("ef_search") == ef), None)
    return row["recall@10"] if row else ""


def qps(report: dict[str, Any], case: str, concurrency: int) -> float | None:
    c = cell(report, case, False, concurrency)
    return c["qps"] if c else None


def row(report: dict[str, Any]) -> list[Any]:
    total, hnsw = bytes_per_chunk(report)
    hs, md, http = (
        cell(report, case, False, 1) for case in ("hybrid_search", "match_documents", "POST /search")
    )
    hs_f = cell(report, "hybrid_search", True, 1)
    ref = cell(report, "supabase_ref", False, 1)
    indexed = cell(report, "supabase_ref_indexed", False, 1)
    q1, q8 = qps(report, "hybrid_search", 1), qps(report, "hybrid_search", 8)
    load = report["load"]
    return [
        f"{report['size']:,} × {report['dims']}-d",
        f"{load['copy_seconds']:.0f} / {load['hnsw_build_seconds']:.0f}",
        f"{total:,.0f} / {hnsw:,.0f}",
        f"{hs['p50_ms']} / {hs['p95_ms']} / {hs['p99_ms']}" if hs else "",
        f"{hs_f['p95_ms']}" if hs_f else "",
        f"{md['p50_ms']} / {md['p95_ms']}" if md else "",
        f"{http['p50_ms']} / {http['p95_ms']}" if http else "",
        f"{q1} / {q8} ({q8 / q1:.2f}×)" if q1 and q8 else "",
        f"{hs['p50_ms'] / ref['p50_ms']:.2f}" if hs and ref else "",
        f"{hs['p50_ms'] / indexed['p50_ms']:.2f}" if hs and indexed else "",
        f"{recall_at_default(report, False, 100)} / {recall_at_default(report, True, 200)}",
    ]


HEADERS = [
    "chunks × dims",
    "COPY / HNSW build s",
    "bytes per chunk: all / HNSW",
    "hybrid_search p50 / p95 / p99 ms",
    "hybrid 1% filter p95 ms",
    "match_documents p50 / p95 ms",
    "POST /search p50 / p95 ms",
    "hybrid QPS c=1 / c=8",
    "ours / guide p50 (as published: scans every row)",
    "ours / guide p50 (its vector leg on its index)",
    "recall@10 (ef 100) / 1% filter (ef 200)",
]


def main(argv: list[str] | None = None) -> None:
    named = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    loaded = {
        p: json.loads(p.read_text(encoding="utf-8"))
        for p in named or sorted(RESULTS_DIR.glob("latency-*.json"))
    }
    # A sweep-only file (latency-<size>-sweep.json) is not a run report: skipped when globbed,
    # refused when named.
    wrong = [p for p, r in loaded.items() if "size" not in r]
    if named and wrong:
        sys.exit(f"not a bench.latency run report (no 'size'): {', '.join(map(str, wrong))}")
    reports = sorted((r for r in loaded.values() if "size" in r), key=lambda r: (r["size"], r["dims"]))
    print(markdown_table(HEADERS, [row(r) for r in reports], "l" + "r" * (len(HEADERS) - 1)))


if __name__ == "__main__":
    main()
