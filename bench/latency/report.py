"""Markdown for one size of the latency benchmark (bench/latency writes the JSON it renders)."""

from __future__ import annotations

from typing import Any

from bench.common.report import markdown_table
from bench.latency.sweep import render_sweep

# Issue 6's targets on 2 cores: hybrid_search p95 <= 20 ms at 100k chunks and <= 60 ms at 1M.
TARGETS = {"search_http_p95_ms": 60.0, "qps_ratio_8_vs_1": 1.7}
RATIO_KEYS = ("qps_8", "ratio_8", "qps_32", "ratio_32")
CELL_KEYS = ("concurrency", "queries", "qps", "p50_ms", "p95_ms", "p99_ms", "errors")


def hybrid_p95_target(size: int) -> float:
    return 20.0 if size <= 100_000 else 60.0


def blank(v: Any) -> Any:
    return "" if v is None else v


def mib(n: int | None) -> str:
    return "" if n is None else f"{n / 2**20:,.1f}"


def cell(report: dict[str, Any], case: str, filtered: bool, concurrency: int) -> dict[str, Any] | None:
    want = "bucket=rare" if filtered else None
    cells = report["cells"]
    return next(
        (c for c in cells if (c["case"], c["filter"], c["concurrency"]) == (case, want, concurrency)), None
    )


def ratios(report: dict[str, Any]) -> list[dict[str, Any]]:
    """QPS at concurrency 8 (and 32) over QPS at 1, per case and filter."""
    out = []
    for case in dict.fromkeys(c["case"] for c in report["cells"]):
        for filtered in (False, True):
            one = cell(report, case, filtered, 1)
            if not one or not one["qps"]:
                continue
            row = {"case": case, "filter": "bucket=rare" if filtered else None, "qps_1": one["qps"]}
            for n in (8, 32):
                other = cell(report, case, filtered, n)
                row[f"qps_{n}"] = other["qps"] if other else None
                row[f"ratio_{n}"] = round(other["qps"] / one["qps"], 2) if other and other["qps"] else None
            out.append(row)
    return out


def verdicts(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    def verdict(what: str, measured: Any, unit: str, target: str, met: bool) -> tuple[str, str, str, str]:
        return what, f"{measured}{unit}", target, "met" if met else "missed"

    hs, http = cell(report, "hybrid_search", False, 1), cell(report, "POST /search", False, 1)
    target = hybrid_p95_target(report["size"])
    rows = []
    if hs:
        rows.append(
            verdict(
                "hybrid_search p95, c=1", hs["p95_ms"], " ms", f"<= {target:g} ms", hs["p95_ms"] <= target
            )
        )
    if http:
        met = http["p95_ms"] <= TARGETS["search_http_p95_ms"]
        rows.append(verdict("POST /search p95, c=1", http["p95_ms"], " ms", "<= 60 ms", met))
    for r in ratios(report):
        if r["filter"] is None and not r["case"].startswith("supabase_ref") and r["ratio_8"] is not None:
            met = r["ratio_8"] >= TARGETS["qps_ratio_8_vs_1"]
            rows.append(verdict(f"{r['case']} QPS(8)/QPS(1)", r["ratio_8"], "", ">= 1.7", met))
    return rows


def render(report: dict[str, Any]) -> str:
    load, size, server, sizes = report["load"], report["size"], report["server"], report["sizes"]
    steps = [
        (k.removesuffix("_seconds").replace("_", " "), v) for k, v in load.items() if k.endswith("_seconds")
    ]
    ref_steps = (report.get("supabase_ref_load") or {}).items()
    steps = [(k, v) for k, v in steps if v is not None]
    steps += [(f"supabase_ref {k.removesuffix('_seconds').replace('_', ' ')}", v) for k, v in ref_steps]
    triggers = (
        "on during COPY; their time is included in copy"
        if load["term_stats_mode"] == "trigger"
        else "disabled during COPY, then refresh_term_stats()"
    )
    tables = [
        (
            t["table"],
            f"{t['rows']:,}" if t["rows"] >= 0 else "",
            mib(t["total"]),
            mib(t["heap"]),
            mib(t["toast"]),
        )
        for t in sizes["tables"]
    ]
    cells = [
        (c["case"], c["filter"] or "", *(c[k] for k in CELL_KEYS), c["loadavg_after"][0])
        for c in report["cells"]
    ]
    qps_ratios = [
        (r["case"], r["filter"] or "", r["qps_1"], *(blank(r[k]) for k in RATIO_KEYS))
        for r in ratios(report)
        if r["qps_8"] is not None or r["qps_32"] is not None  # the c=1-only reference has no ratio
    ]
    blocks = [
        f"# Latency at {size:,} chunks ({report['dims']}-d)",
        f"`{report['command']}` — code {report['code']}, {report['machine']['nproc']} × "
        f"{report['machine']['cpu']}; PostgreSQL {server['server_version']}, pgvector {server['vector']}, "
        f"shared_buffers {server['shared_buffers']}, work_mem {server['work_mem']}, "
        f"JIT available: {server['jit_available']}. Load average during the cells: "
        f"{report['loadavg']['min']:.2f}–{report['loadavg']['max']:.2f} (1-min).",
        f"Corpus: {report['corpus']['description']}",
        "## Load" + (" (reused database: times from its original load)" if report["reused"] else ""),
        markdown_table(["step", "seconds"], steps),
        f"Term statistics: `{load['term_stats_mode']}` (triggers {triggers}). COPY in statements of "
        f"{load['batch_chunks']:,} chunks, each with its documents, one transaction each; GIN indexes (fts, "
        f"metadata) and btrees stay on; the HNSW index was dropped and rebuilt with "
        f"maintenance_work_mem = {load['maintenance_work_mem']}.",
        "## Sizes (MiB)",
        markdown_table(["table", "rows", "total", "heap", "TOAST"], tables),
        markdown_table(["index", "MiB"], [(i["index"], mib(i["bytes"])) for i in sizes["indexes"]]),
    ]
    if report["cells"]:
        blocks[3:3] = [
            "## Verdict against the targets",
            markdown_table(["what", "measured", "target", ""], verdicts(report), "lrrl"),
        ]
        blocks += [
            "## Latency and throughput",
            f"Closed loop, {report['seconds_per_cell']} s or {report['max_queries_per_cell']} queries per "
            f"cell, {report['query_count']} real questions ({report['query_langs']}) cycled; SQL cells call "
            "the product's repository functions, one connection per thread; POST /search goes through "
            "uvicorn (one process, pool of 10 connections, the service key) with precomputed query "
            "vectors. Filter `bucket=rare` keeps 1% of chunks.",
            markdown_table(
                [
                    "case",
                    "filter",
                    "conc.",
                    "queries",
                    "QPS",
                    "p50 ms",
                    "p95 ms",
                    "p99 ms",
                    "errors",
                    "load 1m",
                ],
                cells,
                "llrrrrrrrr",
            ),
            markdown_table(
                ["case", "filter", "QPS c=1", "QPS c=8", "c=8 / c=1", "QPS c=32", "c=32 / c=1"],
                qps_ratios,
                "llrrrrr",
            ),
            *stage_section(report),
            *rls_section(report),
            *supabase_section(report),
            *embedding_section(report),
            *explain_section(report),
            *recall_section(report),
        ]
    blocks += render_sweep(report.get("sweep") or [], report["seconds_per_cell"])
    return "\n\n".join(blocks) + "\n\n"


def stage_section(report: dict[str, Any]) -> list[str]:
    rows = [c for c in report["cells"] if c.get("server_stage_p50_ms")]
    if not rows:
        return []
    keys = list(dict.fromkeys(k for c in rows for k in c["server_stage_p50_ms"]))
    stages = [
        (
            c["filter"] or "",
            c["concurrency"],
            c["p50_ms"],
            *(c["server_stage_p50_ms"].get(k, "") for k in keys),
        )
        for c in rows
    ]
    return [
        "Where POST /search spends its time, by the medians of the stage times its diagnostics report "
        "(the rest of the client-side latency is HTTP, JSON and waiting for a thread or a pooled "
        "connection):",
        markdown_table(["filter", "conc.", "client p50", *keys], stages, "lr" + "r" * (len(keys) + 1)),
    ]


def rls_section(report: dict[str, Any]) -> list[str]:
    """Each query as the tables' owner and as a signed-in user, back to back (bench/latency/rls.py)."""
    rows = [
        (
            r["function"],
            r["queries"],
            f"{r['owner_p50_ms']} / {r['owner_p95_ms']}" if "owner_p50_ms" in r else "",
            f"{r['user_p50_ms']} / {r['user_p95_ms']}" if "user_p95_ms" in r else r["user_p50_ms"],
            blank(r.get("p50_ratio")),
            blank(r.get("p95_ratio")),
        )
        for r in report.get("rls") or []
    ]
    if not rows:
        return []
    return [
        "## Row-level security",
        "Each query as a signed-in user (the bench tenant owning 10 % of the documents; RLS admits its "
        "chunks and the 1 % public corpus) and as the tables' owner (no RLS) reading the same rows through "
        'the filter `{"readers": [tenant]}`, back to back in alternating order (concurrency 1), the '
        "user's call in its own transaction with the role and claims set (backend/db/identity.py) so the "
        "policies of migration 013 decide what each statement sees.",
        markdown_table(
            ["function", "queries", "owner p50 / p95 ms", "user p50 / p95 ms", "p50 ratio", "p95 ratio"],
            rows,
            "lrrrrr",
        ),
    ]


def supabase_section(report: dict[str, Any]) -> list[str]:
    ours = cell(report, "hybrid_search", False, 1)
    guides = [(name, c) for name, case in GUIDES if (c := cell(report, case, False, 1))]
    if not ours or not guides:
        return []
    metrics = (("p50 ms", "p50_ms"), ("p95 ms", "p95_ms"), ("p99 ms", "p99_ms"), ("QPS", "qps"))
    rows = [
        (m, ours[k], *(x for _, c in guides for x in (c[k], round(ours[k] / c[k], 2) if c[k] else "")))
        for m, k in metrics
    ]
    headers = ["", "ours", *(h for name, _ in guides for h in (name, f"ours / {name}"))]
    return [
        "## Against the Supabase guide's hybrid_search (concurrency 1, no filter)",
        "Same rows and vectors in schema supabase_ref (english tsvector of title + content, HNSW "
        "vector_ip_ops), called with the raw question and match_count 15 as "
        "bench/common/supabase_ref.py does. **guide**: the function as published; its vector leg numbers "
        "every row with row_number() over (order by embedding <#> q), which no index serves (Seq Scan + "
        "Sort of the whole table on every call). **guide, indexed**: the same function with that leg "
        "rewritten to `order by … limit` so its HNSW index answers it, warmed like ours. The guide's "
        "full-text leg (english config, websearch_to_tsquery on the unsegmented question) matches "
        "nothing for a Chinese question: a run of Han characters is one lexeme.",
        markdown_table(headers, rows),
    ]


GUIDES = (("guide", "supabase_ref"), ("guide, indexed", "supabase_ref_indexed"))


def embedding_section(report: dict[str, Any]) -> list[str]:
    e = report.get("query_embedding")
    if not e:
        return []
    return [
        "## Query embedding (excluded above)",
        f"{e['model']}: model load {e['load_seconds']} s, then {e['queries']} queries one at a time: "
        f"p50 {e['p50_ms']} ms, p95 {e['p95_ms']} ms, mean {e['mean_ms']} ms.",
    ]


def explain_section(report: dict[str, Any]) -> list[str]:
    out = ["## EXPLAIN (ANALYZE, BUFFERS) of hybrid_search's statement"]
    for p in report.get("explain", []):
        terms = (
            f"{t['lexeme']} ({t['df']}, {t['idf']}{', common' if t['common'] else ''})"
            for t in p["terms"] or []
        )
        nodes = [(n["node"], n["self_ms"], n["total_ms"], n["loops"], n["rows"]) for n in p["dominant_nodes"]]
        out += [
            f"**{p['label']}** — `{p['query']}` → `{p['query_text']}`, filter {p['filter'] or '{}'}; "
            f"planning {p['planning_ms']} ms, execution {p['execution_ms']} ms; before it, "
            f"assert_embedding_space {p['assert_embedding_space_ms']} ms and the term statistics "
            f"{p['term_statistics_ms']} ms; same rows as hybrid_search(): {p['same_rows_as_hybrid_search']}; "
            f"plan in `bench/results/{p['plan_file']}`.",
            "terms (df, idf, common): " + ", ".join(terms),
            markdown_table(["node (by own time)", "own ms", "total ms", "loops", "rows"], nodes, "lrrrr"),
        ]
    return out


def recall_section(report: dict[str, Any]) -> list[str]:
    keys = ("ef_search", "recall@10", "min_recall", "mean_ms", "queries")
    rows = [(r["filter"] or "", *(r[k] for k in keys)) for r in report.get("recall", []) if "ef_search" in r]
    if not rows:
        return []
    return [
        "## Recall@10 of match_documents against exact search",
        markdown_table(
            ["filter", "ef_search", "recall@10", "worst query", "mean ms", "queries"], rows, "lrrrrr"
        ),
    ]
