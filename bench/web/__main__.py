"""What the web leg costs a chat turn, and that a provider slower than the soft deadline cannot delay it.

Usage: .venv/bin/python -m bench.web [--turns N] [--soft-wait-ms MS] [--out bench/results/web.json]

The demo corpus in a scratch database, the local embedding model, extractive answers, the local fake
web provider (backend/testing/fake_web.py; results not cached, so every turn pays the provider). Each
case runs N chat turns through ChatService, interleaved with the others so all see the same machine
load; the report gives p50/p95 per case and the ratio to the same question without the web.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np

from backend import PROJECT_ROOT
from backend.auth import LOCAL_IDENTITY
from backend.chat.service import ChatRequest
from backend.composition import Services
from backend.embeddings import LocalEmbedder
from backend.ingest.loaders import load_path
from backend.testing.fake_web import FakeWebServer
from bench.common import RESULTS_DIR, bench_settings, log
from bench.common.db import scratch_database, services
from bench.common.report import markdown_table, run_record, write_json

INSIDE = "三阶段检索分别做什么？"  # the demo corpus answers it
OUTSIDE = "大熊猫每天吃多少竹子？"  # only the fake web does
CASES: list[tuple[str, str, Any, str]] = [
    # (case, question, web flag, provider behaviour appended to the query)
    ("documents, web off", INSIDE, False, ""),
    ("documents, web=true, provider 300 ms", INSIDE, True, "fake:latency=300"),
    ("documents, web=true, provider hangs", INSIDE, True, "fake:hang=60"),
    ("not in documents, auto, provider 300 ms", OUTSIDE, "auto", "fake:latency=300"),
    ("not in documents, auto, provider hangs", OUTSIDE, "auto", "fake:hang=60"),
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="chat turns per case")
    parser.add_argument("--soft-wait-ms", type=int, default=2000, help="WEB_SOFT_WAIT_MS")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "web.json")
    return parser.parse_args(argv)


async def turns(app: Services, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {case: [] for case, *_ in CASES}
    for _ in range(rounds):
        for case, question, web, behaviour in CASES:
            message = f"{question} {behaviour}".strip()
            started = time.perf_counter()
            await app.chat.chat(ChatRequest(message=message, web=web), identity=LOCAL_IDENTITY)
            times[case].append((time.perf_counter() - started) * 1000)
    await app.web.aclose()
    return times


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with FakeWebServer() as fake:
        settings = bench_settings(
            web_search_provider="tavily",
            tavily_api_key=fake.api_key,
            tavily_base_url=fake.base_url,
            web_allow_private_addresses=True,
            web_cache_ttl_s=0,
            web_deep_read_top_n=0,
            web_soft_wait_ms=args.soft_wait_ms,
            web_timeout_s=120,
        )
        with scratch_database("web") as url, services(url, settings, LocalEmbedder(settings)) as app:
            app.ingestion.ingest(load_path(PROJECT_ROOT / "demo" / "corpus"), identity=None)
            log(f"{len(CASES)} cases x {args.turns} turns, soft deadline {args.soft_wait_ms} ms")
            times = asyncio.run(turns(app, args.turns))
        dropped = fake.disconnects
    base = float(np.median(times[CASES[0][0]]))
    rows = []
    for case, *_ in CASES:
        ms = np.array(times[case])
        p50, p95 = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
        rows.append((case, len(ms), round(p50), round(p95), round(float(ms.max())), round(p50 / base, 2)))
    report = {
        **run_record("bench.web"),
        "soft_wait_ms": args.soft_wait_ms,
        "turns": times,
        "dropped": dropped,
    }
    write_json(args.out, report)
    print(f"# The web leg's cost to a chat turn (soft deadline {args.soft_wait_ms} ms)\n")
    print(markdown_table(["case", "turns", "p50 ms", "p95 ms", "max ms", "p50 / web off"], rows, "lrrrrr"))
    print(f"\nConnections the fake provider saw dropped at the deadline: {dropped}.")


if __name__ == "__main__":
    main()
