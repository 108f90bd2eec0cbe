"""bench.quality's JSON report as Markdown (also: `python -m bench.quality.report results.json`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.common.report import markdown_table

METRICS = (
    ("recall@1", "R@1"),
    ("recall@5", "R@5"),
    ("recall@10", "R@10"),
    ("mrr@10", "MRR@10"),
    ("ndcg@10", "nDCG@10"),
)
THROUGHPUT_HEADERS = (
    "dataset|docs|chunks|ingest s|chunks/s|embedded|from cache|queries|pipeline q/s|pipeline ms/query"
).split("|")


def render(report: dict[str, Any]) -> str:
    """Per-dataset tables, the combined nDCG@10 table, and ingest/throughput figures."""
    m = report["machine"]
    parts = [
        f"# Retrieval quality ({report['embedder']})",
        f"`{report['command']}` at {report.get('code', '?')} on {m['nproc']} cores ({m['cpu']}), "
        f"total {report.get('total_seconds', 0):.0f} s.",
    ]
    for name, ds in report["datasets"].items():
        parts += [f"## {name}", _summary(ds), _variant_table(ds), _diagnostics(ds)]
    parts += ["## nDCG@10, all datasets", _combined(report)]
    parts += ["## Ingest and query throughput", _throughput(report)]
    parts += ["Variants: " + "; ".join(f"`{k}` = {v}" for k, v in report["variants"].items()) + "."]
    return "\n\n".join(parts) + "\n"


def _summary(ds: dict[str, Any]) -> str:
    ing, qe = ds["ingest"], ds["query_embedding"]
    return (
        f"Code {ds.get('code', '?')}: {ds['documents']} documents, {ds['chunks']} chunks, "
        f"{ds['queries']} queries. "
        f"Ingest {ing['seconds']:.1f} s ({ing['chunks_embedded']} chunks embedded, "
        f"{ing['chunks_from_cache']} from the cache); query embedding {qe['seconds']:.1f} s "
        f"({qe['embedded']} embedded, {qe['from_cache']} cached); pipeline {ds['pipeline_qps']:.1f} "
        "queries/s (query vectors cached)."
    )


def _variant_table(ds: dict[str, Any]) -> str:
    variants = ds["variants"]
    best = {key: max(v[key] for v in variants.values()) for key, _ in METRICS}
    rows = [
        [f"`{name}`", *(_fmt(v[key], v[key] == best[key]) for key, _ in METRICS), f"{v['ms_per_query']:.1f}"]
        for name, v in variants.items()
    ]
    return markdown_table(["variant", *(label for _, label in METRICS), "ms/query"], rows)


def _diagnostics(ds: dict[str, Any]) -> str:
    d = ds["diagnostics"]
    versus = ", ".join(f"`{k}` {v['better']}/{v['worse']}" for k, v in d["pipeline_vs"].items())
    return (
        f"Gold document among the pipeline's {d['pipeline_candidates_mean']:.1f} prefetched candidates: "
        f"{d['pipeline_candidate_recall']:.1%} (the rerank's ceiling). Our full-text leg matched a chunk "
        f"for {d['fulltext_hit_rate']:.1%} of queries ({d['queries_without_terms']:.1%} had no query "
        f"term); the guide's websearch_to_tsquery for {d['supabase_fts_hit_rate']:.1%}. Queries where "
        f"`pipeline` has a higher/lower nDCG@10 than: {versus}."
    )


def _combined(report: dict[str, Any]) -> str:
    names = list(report["datasets"])
    variants = list(next(iter(report["datasets"].values()))["variants"]) if names else []
    best = {n: max(v["ndcg@10"] for v in report["datasets"][n]["variants"].values()) for n in names}
    rows = []
    for variant in variants:
        scores = [report["datasets"][n]["variants"][variant]["ndcg@10"] for n in names]
        cells = [_fmt(s, s == best[n]) for s, n in zip(scores, names, strict=True)]
        rows.append([f"`{variant}`", *cells, f"{sum(scores) / len(scores):.3f}"])
    return markdown_table(["variant", *names, "mean"], rows)


def _throughput(report: dict[str, Any]) -> str:
    rows = []
    for name, ds in report["datasets"].items():
        ing, pipeline = ds["ingest"], ds["variants"]["pipeline"]
        chunks_per_s = ds["chunks"] / max(ing["seconds"], 1e-9)
        rows.append(
            [name, ds["documents"], ds["chunks"], f"{ing['seconds']:.1f}", f"{chunks_per_s:.1f}"]
            + [ing["chunks_embedded"], ing["chunks_from_cache"], ds["queries"], f"{ds['pipeline_qps']:.1f}"]
            + [f"{pipeline['ms_per_query']:.1f}"]
        )
    return markdown_table(THROUGHPUT_HEADERS, rows)


def _fmt(value: float, bold: bool) -> str:
    text = f"{value:.3f}"
    return f"**{text}**" if bold else text


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        print(render(json.load(fh)))
