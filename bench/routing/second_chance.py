"""python -m bench.routing.second_chance: /chat on the routing benchmark's samples with the second chance
(CHAT_SECOND_CHANCE_ENABLED, backend/chat/second_chance.py) off and on - what it fixes, what it breaks,
how often it fires and what it costs.

Same corpora, samples and chat settings as `python -m bench.routing` (web off, extractive generator);
each sampled question is asked twice, once per setting. `python -m bench.routing --reuse` cannot show
the retry: it re-scores stored searches, and the retry is a new search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.chat.service import ChatRequest, ChatService
from backend.composition import Services, build_services
from backend.embeddings import LocalEmbedder
from backend.ingest.loaders import load_path
from backend.llm.extractive import ExtractiveLLM
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import dataset_names
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached
from bench.routing.__main__ import WORK_DIR, database_label
from bench.routing.chat import contains_gold, outcome
from bench.routing.plan import build_variants
from bench.routing.split import Question, write_half_corpus
from bench.routing.split import chat_sample as pick_sample
from bench.routing.variants import KINDS, Variant


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.routing.second_chance", description=__doc__)
    parser.add_argument("--sets", nargs="+", default=None, help="development sets (default: all)")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--variants", nargs="+", choices=KINDS, default=["monolingual"])
    parser.add_argument("--sample", type=int, default=100, help="/chat questions per half per set")
    parser.add_argument("--questions", type=int, default=300, help="keyword / native: questions per side")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "second_chance.json")
    parser.add_argument("--render", type=Path, default=None, help="print the table of a stored run")
    args = parser.parse_args(argv)
    args.sets = args.sets or dataset_names(args.datasets_dir)
    return args


async def ask_both(services: Services, sample: list[Question]) -> list[dict[str, Any]]:
    off = ChatService(
        services.db,
        services.retrieval,
        services.llm,
        services.settings.model_copy(update={"chat_second_chance_enabled": False}),
        services.web,
    )
    rows = []

    def gold(reply: Any, q: Question) -> bool:
        return outcome(reply) == "answer" and contains_gold(reply.answer, q.answers)

    for n, q in enumerate(sample, 1):
        request = ChatRequest(message=q.text, web=False)
        before = await off.chat(request, identity=LOCAL_IDENTITY)
        started = time.perf_counter()
        after = await services.chat.chat(ChatRequest(message=q.text, web=False), identity=LOCAL_IDENTITY)
        ms = (time.perf_counter() - started) * 1000
        evidence = after.diagnostics.evidence
        assert evidence is not None  # a dataset question is searched (never small talk)
        chance = evidence.second_chance
        rows.append(
            {
                "qid": q.qid,
                "answerable": q.answerable,
                "before": outcome(before),
                "after": outcome(after),
                "before_gold": gold(before, q),
                "after_gold": gold(after, q),
                "fired": chance.triggered,
                "chosen": chance.chosen,
                "retry_ms": sum(a.ms for a in chance.attempts[1:]),
                "turn_ms": round(ms, 1),
                "attempts": [a.model_dump() for a in chance.attempts],
            }
        )
        if n % 50 == 0:
            log(f"  {n}/{len(sample)}")
    return rows


def run(variant: Variant, args: argparse.Namespace, inner: LocalEmbedder) -> list[dict[str, Any]]:
    half = write_half_corpus(variant.split, WORK_DIR / variant.key)
    cache = BenchCache(inner.model_id, variant.caches[0])
    for other in variant.caches[1:]:
        known = BenchCache(inner.model_id, other)
        for mine, theirs in ((cache.passages, known.passages), (cache.queries, known.queries)):
            for key, vector in theirs.items():
                mine.setdefault(key, vector)
    split = variant.split
    sample = [q for side in (split.answerable, split.unanswerable) for q in pick_sample(side, args.sample)]
    log(f"{variant.key}: {len(sample)} questions, asked twice")
    with scratch_database(f"chance_{database_label(variant.key)}") as url:
        services = build_services(
            bench_settings(),
            database_url=url,
            embedder=CachedEmbedder(inner, cache),
            llm=ExtractiveLLM(),
            migrate=False,
        )
        try:
            ingest_cached(services, load_path(half.corpus_path), variant.key)
            rows = asyncio.run(ask_both(services, sample))
            cache.save()
        finally:
            services.close()
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    unans = [r for r in rows if not r["answerable"]]
    fired = [r for r in rows if r["fired"]]
    retried = [r for r in fired if len(r["attempts"]) > 1]  # a reformulation was searched
    costs = sorted(r["retry_ms"] for r in retried)

    def share(items: list[dict[str, Any]], key: str, value: Any = "answer") -> float:
        return round(100 * sum(r[key] == value for r in items) / len(items), 1) if items else 0.0

    return {
        "answerable": len(ans),
        "unanswerable": len(unans),
        "ans_answer_before": share(ans, "before"),
        "ans_answer_after": share(ans, "after"),
        "ans_gold_before": share(ans, "before_gold", True),
        "ans_gold_after": share(ans, "after_gold", True),
        "ans_clarify_after": share(ans, "after", "clarify"),
        "unans_answer_before": share(unans, "before"),
        "unans_answer_after": share(unans, "after"),
        "unans_clarify_after": share(unans, "after", "clarify"),
        "fired": round(100 * len(fired) / len(rows), 1) if rows else 0.0,
        "retried": round(100 * len(retried) / len(rows), 1) if rows else 0.0,
        "chosen_retry": sum(r["chosen"] != "original" for r in fired),
        "retry_ms_p50": round(statistics.median(costs), 1) if costs else None,
        "retry_ms_p95": round(costs[min(len(costs) - 1, int(0.95 * len(costs)))], 1) if costs else None,
    }


def render(report: dict[str, Any]) -> str:
    head = (
        "| group | sample ans / unans | weak first search | retried | retry chosen | "
        "ans → answer before / after | ans: gold string before / after | ans clarified after | "
        "unans → answer before / after | "
        "unans clarified after | retry ms p50 / p95 |\n|---|---|---:|---:|---:|---|---|---:|---|---:|---|"
    )
    lines = [head]
    for key, s in report["groups"].items():
        lines.append(
            f"| {key} | {s['answerable']} / {s['unanswerable']} | {s['fired']}% | {s['retried']}% | "
            f"{s['chosen_retry']} | "
            f"{s['ans_answer_before']}% / **{s['ans_answer_after']}%** | "
            f"{s['ans_gold_before']}% / {s['ans_gold_after']}% | {s['ans_clarify_after']}% | "
            f"{s['unans_answer_before']}% / **{s['unans_answer_after']}%** | {s['unans_clarify_after']}% | "
            f"{s['retry_ms_p50']} / {s['retry_ms_p95']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render is not None:  # the table of a stored run, summarised again
        stored = json.loads(args.render.read_text(encoding="utf-8"))
        stored["groups"] = {key: summary(rows) for key, rows in stored["rows"].items()}
        print(render(stored))
        return 0
    inner = LocalEmbedder(bench_settings())
    report: dict[str, Any] = {
        "command": command_line("bench.routing.second_chance"),
        "code": code_version(),
        "machine": machine(),
        "groups": {},
        "rows": {},
    }
    for variant in build_variants(args.variants, args.sets, args.datasets_dir, args.questions):
        rows = run(variant, args, inner)
        report["rows"][variant.key] = rows
        report["groups"][variant.key] = summary(rows)
        write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
