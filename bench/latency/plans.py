"""EXPLAIN (ANALYZE, BUFFERS) of the exact statement hybrid_search runs, and recall@10 of the vector leg.

hybrid_search (sql/hybrid_search.sql) first derives, with hybrid_search_terms(), one tsquery and one
idf per query term, the GIN match query (the rarest uncommon terms) and the average chunk length;
TERMS_SQL calls that same function, and each plan is checked against hybrid_search: the prepared
statement must return the rows hybrid_search returns.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from backend.config import Settings
from backend.db.connection import connect
from backend.db.repositories import retrieval as retrieval_repo
from backend.retrieval.params import HYBRID, HybridParams
from bench.common.db import scalar
from bench.common.synthetic import Query
from bench.latency.cells import RARE_FILTER, sql_runner

# What hybrid_search derives from the query before its statement runs ($12, $13, $2, $15), with
# hybrid_search's defaults for the knobs; the same SQL function the function itself calls.
TERMS_SQL = """
select t.term_queries::text[], t.term_idfs, t.match_query::text, t.avg_length, t.terms
from public.hybrid_search_terms(%(query_text)s) t
"""
# $16 - $26 since migrations 016 / 017: the scope's ids, the compiled filter (search_filter()), the
# scope's nearest ids and distances; the ids and the nearest are null on the HNSW plan explained here.
# $27 since migration 025: the collections a search is narrowed to (null here); $28 since migration
# 046: the scope's size (null on the HNSW plan).
PARAM_TYPES = (
    "vector, tsquery, int, jsonb, float8, float8, bool, bool, text, float8, int, "
    "tsquery[], float8[], float8, float8, bigint[], jsonpath, jsonb, bool, jsonb, "
    "timestamptz, timestamptz, timestamptz, timestamptz, bigint[], float8[], uuid[], int"
)
COMPILED_SQL = (
    "select case when residual then path::text end, vars::text, dates, containment::text, "
    "created_from, created_until, updated_from, updated_until from public.search_filter(%s::jsonb)"
)
EXECUTE = (
    "execute hs(%s::vector, %s::tsquery, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, "
    "%s::tsquery[], %s::float8[], %s, %s, %s::bigint[], %s::jsonpath, %s::jsonb, %s, %s::jsonb, "
    "%s::timestamptz, %s::timestamptz, %s::timestamptz, %s::timestamptz, %s::bigint[], %s::float8[], "
    "%s::uuid[], %s::int)"
)


def vector_literal(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def explain_hybrid(
    url: str, dims: int, q: Query, *, filtered: bool, model: str, settings: Settings, out_base: Path
) -> dict[str, Any]:
    """Plans (text + JSON) of one query, saved next to out_base; the dominant nodes; pre-step times."""
    knobs = HybridParams.from_settings(settings)
    match_count = settings.rag_prefetch_k
    leg = knobs.candidate_count or max(match_count * 4, 40)  # hybrid_search's leg_count
    filt = RARE_FILTER if filtered else {}
    with connect(url, autocommit=True) as conn:
        conn.prepare_threshold = None  # our own PREPARE/DEALLOCATE must not meet psycopg's
        terms_params = {"query_text": q.terms}
        pre = {
            "assert_embedding_space_ms": _exec_ms(
                conn, "select public.assert_embedding_space(%s, %s)", (dims, model)
            ),
            "term_statistics_ms": _exec_ms(conn, TERMS_SQL, terms_params),
        }
        terms, idfs, match, avg_length, detail = conn.execute(TERMS_SQL, terms_params).fetchone() or ()
        ef_search = knobs.filtered_ef_search if filtered else knobs.ef_search
        conn.execute("set hnsw.iterative_scan = relaxed_order")
        conn.execute("select set_config('hnsw.ef_search', %s, false)", (str(max(ef_search, leg)),))
        text = scalar(conn, "select public.hybrid_search_query(%s)", (dims,))
        conn.execute("deallocate all")
        conn.execute(sql.SQL("prepare hs ({}) as {}").format(sql.SQL(PARAM_TYPES), sql.SQL(text)))
        params = (
            vector_literal(q.vector),
            match,
            leg,
            json.dumps(filt),
            knobs.full_text_weight,
            knobs.semantic_weight,
            match is not None,
            knobs.semantic_weight > 0,
            model,
            float(knobs.rrf_k),
            match_count,
            terms,
            idfs,
            0.5,  # length_norm's default
            avg_length,
            None,  # $16: no scope of ids (the HNSW plan)
            *(conn.execute(COMPILED_SQL, (json.dumps(filt),)).fetchone() or ()),
            None,  # $25 / $26: no exact ranking
            None,
            None,  # $27: no narrowing to collections (migration 025)
            None,  # $28: no scope counted (migration 046)
        )
        cur = psycopg.ClientCursor(conn)
        prepared_ids = [r[0] for r in cur.execute(EXECUTE, params).fetchall()]  # also warms the cache
        run, close = sql_runner(url, settings, model, HYBRID, filtered)()
        try:
            function_ids = [r["id"] for r in run(q)]
        finally:
            close()
        plan_text = "\n".join(r[0] for r in cur.execute("explain (analyze, buffers) " + EXECUTE, params))
        plan_json = scalar(cur, "explain (analyze, buffers, format json) " + EXECUTE, params)
        conn.execute("deallocate hs")
    out_base.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"-- query: {q.text}\n-- query_text: {q.terms}\n-- filter: {json.dumps(filt)}\n-- match: {match}\n"
    )
    out_base.with_suffix(".txt").write_text(header + plan_text + "\n", encoding="utf-8")
    out_base.with_suffix(".json").write_text(json.dumps(plan_json, indent=1), encoding="utf-8")
    top = plan_json[0]
    return {
        "query": q.text,
        "query_text": q.terms,
        "filter": filt,
        "terms": detail,
        "match_query": match,
        "same_rows_as_hybrid_search": prepared_ids == function_ids,
        "planning_ms": round(top.get("Planning Time", 0.0), 2),
        "execution_ms": round(top.get("Execution Time", 0.0), 2),
        **pre,
        "dominant_nodes": dominant_nodes(top["Plan"]),
        "plan_file": str(out_base.with_suffix(".txt").name),
    }


def _exec_ms(conn: psycopg.Connection, query: str, params: Any) -> float:
    """Median server-side execution time over 5 runs (EXPLAIN ANALYZE, so no transfer)."""
    cur = psycopg.ClientCursor(conn)
    runs = []
    for _ in range(5):
        plan = scalar(cur, "explain (analyze, format json) " + query, params)[0]
        runs.append(plan["Planning Time"] + plan["Execution Time"])
    return round(float(np.median(runs)), 3)


def dominant_nodes(plan: dict[str, Any], top: int = 6) -> list[dict[str, Any]]:
    """Nodes by exclusive time (own time x loops minus their children's), largest first."""
    nodes: list[dict[str, Any]] = []
    ctes: dict[str, float] = {}

    def walk(node: dict[str, Any]) -> float:
        total = node.get("Actual Total Time", 0.0) * node.get("Actual Loops", 1)
        children = sum(walk(child) for child in node.get("Plans", []))
        name = node.get("Subplan Name", "")
        if name.startswith("CTE "):
            ctes[name[4:]] = total
        nodes.append(
            {
                "node": _label(node),
                "total_ms": total,
                "self_ms": max(total - children, 0.0),
                "loops": node.get("Actual Loops", 1),
                "rows": round(node.get("Actual Rows", 0)),
                "cte": node.get("CTE Name") if node["Node Type"] == "CTE Scan" else None,
            }
        )
        return total

    walk(plan)
    for n in nodes:  # a CTE Scan's time includes running the CTE, which is not its child
        if n["cte"] in ctes:
            n["self_ms"] = max(n["self_ms"] - ctes[n["cte"]], 0.0)
    nodes.sort(key=lambda n: -n["self_ms"])
    return [
        {k: (round(v, 2) if isinstance(v, float) else v) for k, v in n.items() if k != "cte"}
        for n in nodes[:top]
    ]


def _label(node: dict[str, Any]) -> str:
    parts = [node["Node Type"]]
    for key in ("Index Name", "Relation Name", "CTE Name", "Subplan Name", "Function Name"):
        if node.get(key):
            parts.append(f"{key.split()[0].lower()}={node[key]}")
    return " ".join(parts)


# --- recall of the vector leg -----------------------------------------------------------------------


def exact_neighbours(
    url: str, dims: int, queries: Sequence[Query], k: int = 10, block: int = 50_000
) -> tuple[list[list[int]], list[list[int]]]:
    """Exact top-k ids by cosine over every chunk vector (and over the rare-bucket chunks), in numpy."""
    qmat = np.vstack([q.vector for q in queries]).astype(np.float32)
    best = [(np.full((len(queries), 0), -2.0), np.zeros((len(queries), 0), dtype=np.int64)) for _ in range(2)]
    with connect(url) as conn, conn.cursor("exact", binary=True) as cur:
        cur.itersize = block
        cur.execute(
            sql.SQL(
                "select id, embedding::vector({d}), metadata @> %s from public.chunks "
                "where embedding_dims = {d}"
            ).format(d=sql.Literal(dims)),
            (Jsonb(RARE_FILTER),),
        )
        while rows := cur.fetchmany(block):
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            mat = np.vstack([r[1].to_numpy() for r in rows])
            rare = np.array([r[2] for r in rows], dtype=bool)
            for which, mask in ((0, slice(None)), (1, rare)):
                sims = qmat @ mat[mask].T
                scores = np.hstack([best[which][0], sims])
                cand = np.hstack([best[which][1], np.broadcast_to(ids[mask], sims.shape)])
                keep = np.argsort(-scores, axis=1)[:, :k]
                best[which] = (np.take_along_axis(scores, keep, 1), np.take_along_axis(cand, keep, 1))
    return best[0][1].tolist(), best[1][1].tolist()


def recall_at_10(
    url: str,
    dims: int,
    queries: Sequence[Query],
    model: str,
    settings: Settings,
    ef_values: Sequence[int] = (40, 100, 200),
) -> list[dict[str, Any]]:
    """match_documents' recall@10 against exact search, per ef_search, without and with the rare filter."""
    started = time.perf_counter()
    exact_all, exact_rare = exact_neighbours(url, dims, queries)
    exact_seconds = time.perf_counter() - started
    defaults = HybridParams.from_settings(settings)
    out = []
    with connect(url, autocommit=True) as conn:
        for filtered, exact in ((False, exact_all), (True, exact_rare)):
            for ef in ef_values:
                hits, times = [], []
                for q, truth in zip(queries, exact, strict=True):
                    t0 = time.perf_counter()
                    rows = retrieval_repo.match_documents(
                        conn,
                        query_embedding=q.vector,
                        match_count=10,
                        filter=RARE_FILTER if filtered else {},
                        embedding_model=model,
                        params=dataclasses.replace(
                            defaults, min_similarity=-1.0, ef_search=ef, filtered_ef_search=ef
                        ),
                    )
                    times.append((time.perf_counter() - t0) * 1000)
                    hits.append(len({r["id"] for r in rows} & set(truth)) / len(truth))
                out.append(
                    {
                        "filter": "bucket=rare" if filtered else None,
                        "ef_search": ef,
                        "recall@10": round(float(np.mean(hits)), 4),
                        "min_recall": round(min(hits), 2),
                        "mean_ms": round(float(np.mean(times)), 2),
                        "queries": len(hits),
                    }
                )
    out.append({"exact_search_seconds": round(exact_seconds, 2)})
    return out
