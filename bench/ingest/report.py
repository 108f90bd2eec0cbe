"""bench.ingest's JSON report as Markdown."""

from __future__ import annotations

from typing import Any

from bench.common.report import markdown_table, run_table


def render(report: dict[str, Any]) -> str:
    lines = [
        f"# Ingestion throughput ({report['embedder']}, {report['dataset']})",
        run_table(report),
    ]
    if "end_to_end" in report:
        lines += render_end_to_end(report["end_to_end"])
    if "cached" in report:
        lines += render_cached(report["cached"])
    if "database_path" in report:
        lines += render_database_path(report["database_path"])
    if "jobs" in report:
        lines += render_jobs(report["jobs"])
    return "\n\n".join(lines) + "\n"


def _row(label: str, chunks: int, seconds: float) -> list[object]:
    return [
        label,
        chunks,
        f"{seconds:.2f}",
        f"{chunks / seconds:,.0f}" if chunks / seconds >= 100 else f"{chunks / seconds:.2f}",
    ]


def render_end_to_end(a: dict[str, Any]) -> list[str]:
    rows = [
        _row(f"(a) IngestionService, empty cache, first {a['documents']} docs", a["chunks"], a["seconds"]),
        _row("(a) embedder.embed_documents alone, same texts", a["model_texts"], a["model_seconds"]),
    ]
    ratio = a["chunks_per_s"] / a["model_chunks_per_s"]
    return [
        markdown_table(["measurement", "chunks", "seconds", "chunks/s"], rows, "lrrr"),
        f"End to end / model alone: **{ratio:.2f}** (the model is {ratio:.0%} of the time).",
    ]


def render_cached(b: dict[str, Any]) -> list[str]:
    rows = [
        _row(f"(b) IngestionService, every vector cached, {b['documents']} docs", b["chunks"], b["seconds"]),
        _row("(b) the same, bulk mode", b["chunks"], b["bulk_seconds"]),
        _row("(b) preparation alone (chunk, jieba, metadata)", b["chunks"], b["prepare_seconds"]),
    ]
    return [
        markdown_table(["measurement", "chunks", "seconds", "chunks/s"], rows, "lrrr"),
        f"Cached ingest / preparation alone: {b['chunks_per_s'] / b['prepare_chunks_per_s']:.2f} "
        f"(bulk mode: {b['bulk_chunks_per_s'] / b['prepare_chunks_per_s']:.2f}). (b) used "
        f"{b['real_vectors']} vectors from .data/bench-cache and {b['chunks'] - b['real_vectors']} random "
        f"unit vectors; chunks embedded: {b['chunks_embedded']} and {b['bulk_chunks_embedded']}.",
    ]


def render_database_path(c: dict[str, Any]) -> list[str]:
    n, base = c["chunks"], c["chunks"] / c["per_document"]["seconds"]
    bulk, hnsw_only = c["bulk"], c["bulk_hnsw_only"]

    def row(label: str, seconds: float) -> list[object]:
        return [label, f"{seconds:.2f}", f"{n / seconds:,.0f}", f"{n / seconds / base:.1f}x"]

    rows = [
        row("per document: upsert, DELETE, COPY per document (before)", c["per_document"]["seconds"]),
        row("grouped: one upsert, DELETE, COPY per group (now)", c["grouped"]["seconds"]),
        row("bulk: load (HNSW + GIN dropped, term-stats triggers paused)", bulk["load_seconds"]),
        row(
            f"bulk: catch-up (term stats {bulk['term_stats_seconds']:.1f} s, indexes "
            f"{bulk['index_build_seconds']:.1f} s, analyze {bulk['analyze_seconds']:.1f} s, commit)",
            bulk["catch_up_seconds"],
        ),
        row("**bulk: together, until the commit**", bulk["seconds"]),
        row("bulk deferring HNSW only: load", hnsw_only["load_seconds"]),
        row(
            f"bulk deferring HNSW only: catch-up (indexes {hnsw_only['index_build_seconds']:.1f} s)",
            hnsw_only["catch_up_seconds"],
        ),
        row("bulk deferring HNSW only: together", hnsw_only["seconds"]),
    ]
    return [
        f"(c) Database path: {n:,} synthetic chunks ({c['dims']}-d) in {c['documents']:,} documents, "
        f"{c['groups']:,} write groups of ~{c['group_chunks']} chunks, each path into a fresh database.",
        markdown_table(["path", "seconds", "chunks/s", "vs per document"], rows, "lrrr"),
    ]


def _rate(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def render_jobs(d: dict[str, Any]) -> list[str]:
    rows: list[list[object]] = []
    for r in d["formats"]:
        rows.append(
            [
                r["format"],
                r["files"],
                r["chunks"],
                _rate(r["files"] / r["direct_s"]),
                _rate(r["files"] / r["job_s"]),
                f"{r['job_s'] / r['direct_s']:.2f}",
            ]
        )
    files = sum(r["files"] for r in d["formats"])
    direct_s = sum(r["direct_s"] for r in d["formats"])
    job_s = sum(r["job_s"] for r in d["formats"])
    rows.append(
        [
            "**all**",
            files,
            sum(r["chunks"] for r in d["formats"]),
            _rate(files / direct_s),
            _rate(files / job_s),
            f"**{job_s / direct_s:.2f}**",
        ]
    )
    return [
        f"(d) {d['files_per_format']} files of each format (~8,000 characters each), embedder "
        f"{d['embedder']}: the direct upload path against a background job worked by one worker, each "
        "into its own fresh database.",
        markdown_table(
            ["format", "files", "chunks", "files/s direct", "files/s as a job", "job / direct time"],
            rows,
            "lrrrrr",
        ),
    ]
