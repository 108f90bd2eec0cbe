"""Markdown for bench.distributed: one row per dataset, one node against the cluster."""

from __future__ import annotations

from typing import Any


def render(report: dict[str, Any]) -> str:
    layout = report["layout"]
    who = (
        f"the corpus dealt to {report['tenants']} users, searched by the service role (every shard)"
        if layout == "tenants"
        else "the shared corpus, searched as a user (public + own tenant)"
    )
    lines = [
        f"## Retrieval on the cluster vs one node ({report['embedder']} embedder, "
        f"{report['shards']} shards; {who})",
        "",
        "| dataset | queries | nDCG@10 one node | nDCG@10 cluster | delta | same ranking | same scores | "
        "same route | p50 ms one node | p50 ms cluster |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in report["datasets"].items():
        lines.append(
            f"| {name} | {r['queries']} | {r['ndcg@10_single']:.4f} | {r['ndcg@10_cluster']:.4f} | "
            f"{r['ndcg@10_delta']:+.4f} | {r['same_ranking']} | {r['same_ranking_and_scores']} | "
            f"{r['same_route']} | "
            f"{r['search_ms_p50_single']} | {r['search_ms_p50_cluster']} |"
        )
    return "\n".join(lines) + "\n"
