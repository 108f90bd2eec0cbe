"""Deep research on compound questions: is every part of a joined request answered from its document?

Usage: .venv/bin/python -m bench.research [--dataset NAME ... | --all] [--compounds N] [--seed S]
                                          [--llm extractive|gemini] [--embedder local|hashing]
                                          [--out bench/results/research.json]
       .venv/bin/python -m bench.research --web [--compounds N] [--llm extractive|fake] [--web-results K]
                                          [--single | --multihop]

Per dataset: a scratch database with the whole corpus (vectors from .data/bench-cache), then N compound
questions (bench/research/compound.py: 2, 3 or 4 sampled questions with different gold documents,
joined as a user would write them) through ResearchService (POST /research's path, lite preset, web off).
A component question scores when a source the report cites is its gold document (qrels), and when its
gold answer string appears in the report's sections. The baseline, measured in the same run on the
same database: each component asked alone through ChatService (POST /chat), so the ratio says what
answering it inside a compound request costs. --llm gemini needs GEMINI_API_KEY.

--web: compound questions whose parts are only on the (fake) web, an empty local corpus, web=true
(bench/research/web.py; the question set: bench/research/web_set.py); --web --multihop: two-hop
questions instead, the second part needing the first part's answer (bench/research/web_multihop.py).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.chat.service import ChatRequest
from backend.composition import Services, build_services
from backend.ingest.loaders import load_path
from backend.research import ResearchRequest
from bench.answers.scoring import contains_gold, load_answers, sample_ids
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import dataset_names, load_dataset
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached, make_embedder
from bench.research.compound import Compound, build_compounds
from bench.research.report import render
from bench.research.web import render_web, run_web


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", action="extend", nargs="+", help="folders under --datasets-dir")
    which.add_argument("--all", action="store_true", help="every dataset under --datasets-dir")
    parser.add_argument("--compounds", type=int, default=40, help="compound questions per set")
    parser.add_argument("--seed", default="research-v1", help="the sample's hash seed")
    parser.add_argument("--llm", choices=("extractive", "gemini", "fake"), default="extractive")
    parser.add_argument("--web", action="store_true", help="the web-only set behind the fake engines")
    parser.add_argument("--web-results", type=int, default=5, help="--web: WEB_MAX_RESULTS (1-25)")
    parser.add_argument(
        "--single", action="store_true", help="--web: one-part questions (the short answer line's case)"
    )
    parser.add_argument(
        "--multihop",
        action="store_true",
        help="--web: two-hop questions, the second part needing the first's answer (web_multihop.py)",
    )
    parser.add_argument("--preset", choices=("lite", "comprehensive"), default="lite")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/research[-gemini].json")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    if not args.dataset:
        args.dataset = dataset_names(args.datasets_dir) if args.all else ["xquad-zh-dev"]
    if args.single and not args.web:
        parser.error("--single is an option of the --web benchmark")
    if args.multihop and not args.web:
        parser.error("--multihop is an option of the --web benchmark")
    if args.multihop and args.single:
        parser.error("--multihop and --single are two question sets: choose one")
    if args.llm == "fake" and not args.web:
        parser.error("--llm fake is the --web benchmark's model path")
    if args.out is None:
        variant = "-single" if args.single else "-multihop" if args.multihop else ""
        stem = f"research-web{variant}" if args.web else "research"
        args.out = RESULTS_DIR / (f"{stem}.json" if args.llm == "extractive" else f"{stem}-{args.llm}.json")
    return args


def run_dataset(name: str, args: argparse.Namespace) -> dict[str, Any]:
    base = bench_settings()  # extractive answers; --llm gemini reads GEMINI_API_KEY from the environment
    settings = type(base).model_validate({**base.model_dump(), "llm_provider": args.llm})
    dataset = load_dataset(name, args.datasets_dir)
    answers = load_answers(dataset.path / "answers.jsonl")
    texts = dict(dataset.queries)
    ids = sample_ids([q for q in texts if q in answers and dataset.qrels.get(q)], None, args.seed)
    compounds = build_compounds(ids, texts, answers, dataset.qrels, args.compounds)
    inner = make_embedder(args.embedder, settings)
    cache = BenchCache(inner.model_id, name)
    parts = sum(len(c.components) for c in compounds)
    log(f"{name}: {len(compounds)} compound questions of {parts} parts; cache {cache.path}")
    with scratch_database(f"research_{name}") as url:
        services = build_services(
            settings, database_url=url, embedder=CachedEmbedder(inner, cache), migrate=False
        )
        try:
            summary = ingest_cached(services, load_path(dataset.corpus_path), name)
            log(f"  {name}: ingested in {summary.seconds:.1f} s")
            items = asyncio.run(_run_all(services, compounds, args.preset, name))
            cache.save()
        finally:
            services.close()
    return {"ingest_seconds": round(summary.seconds, 1), "summary": summarise(items), "items": items}


async def _run_all(
    services: Services, compounds: list[Compound], preset: str, name: str
) -> list[dict[str, Any]]:
    items = []
    try:
        for k, compound in enumerate(compounds, 1):
            items.append(await _one(services, compound, preset))
            if k % 10 == 0:
                log(f"  {name}: {k}/{len(compounds)} research runs")
    finally:
        await services.web.aclose()
    return items


async def _one(services: Services, compound: Compound, preset: str) -> dict[str, Any]:
    """One research run over the compound, then each part alone through the chat (the baseline)."""
    request = ResearchRequest(question=compound.text, preset=preset, web=False)  # type: ignore[arg-type]
    started = time.perf_counter()
    run = await services.research.start(request, identity=LOCAL_IDENTITY)
    body = await services.research.run(run)
    seconds = time.perf_counter() - started
    cited = {s["external_id"] for s in body["sources"]}
    text = "\n".join(s["content"] for s in body["sections"])
    parts = []
    for part in compound.components:
        chat_started = time.perf_counter()
        reply = await services.chat.chat(
            ChatRequest(message=part.question, web=False), identity=LOCAL_IDENTITY
        )
        chat_cited = {s["external_id"] for s in reply.sources if s["cited"]}
        parts.append(
            {
                "qid": part.qid,
                "question": part.question,
                "gold_docs": part.gold_docs,
                "golds": part.golds,
                "cited": bool(cited & set(part.gold_docs)),
                "gold_string": contains_gold(text, part.golds),
                "chat_cited": bool(chat_cited & set(part.gold_docs)),
                "chat_gold_string": contains_gold(reply.answer, part.golds),
                "chat_seconds": round(time.perf_counter() - chat_started, 3),
            }
        )
    used = body["diagnostics"]["budget"]["used"]
    return {
        "question": compound.text,
        "sections": [s["question"] for s in body["sections"]],
        "sources": sorted(cited),
        "partial_reasons": body["partial_reasons"],
        "plan_method": body["diagnostics"]["plan_method"],
        "generator": body["generator"],
        "model_calls": int(used["model_calls"]),
        "searches": int(used["searches"]),
        "tokens": int(used["tokens"]),
        "seconds": round(seconds, 3),
        "parts": parts,
    }


def summarise(items: list[dict[str, Any]]) -> dict[str, Any]:
    parts = [p for i in items for p in i["parts"]]
    n = max(len(parts), 1)
    seconds = sorted(i["seconds"] for i in items)

    def rate(key: str) -> float:
        return sum(p[key] for p in parts) / n

    return {
        "compounds": len(items),
        "parts": len(parts),
        "gold_doc_cited_rate": rate("cited"),
        "gold_string_rate": rate("gold_string"),
        "chat_gold_doc_cited_rate": rate("chat_cited"),
        "chat_gold_string_rate": rate("chat_gold_string"),
        "sections_mean": statistics.fmean(len(i["sections"]) for i in items) if items else 0.0,
        "split_exact_rate": sum(len(i["sections"]) == len(i["parts"]) for i in items) / max(len(items), 1),
        "model_calls_mean": statistics.fmean(i["model_calls"] for i in items) if items else 0.0,
        "searches_mean": statistics.fmean(i["searches"] for i in items) if items else 0.0,
        "partial_rate": sum(bool(i["partial_reasons"]) for i in items) / max(len(items), 1),
        "seconds_p50": seconds[len(seconds) // 2] if seconds else 0.0,
        "seconds_p90": seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))] if seconds else 0.0,
        "chat_seconds_mean": statistics.fmean(p["chat_seconds"] for p in parts) if parts else 0.0,
    }


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    report: dict[str, Any] = {
        "command": command_line("bench.research"),
        "code": code_version(),
        "machine": machine(),
        "llm": args.llm,
        "preset": args.preset,
        "compounds": args.compounds,
        "seed": args.seed,
        "datasets": {},
    }
    if args.web:
        report["web"] = run_web(args)
        report["total_seconds"] = round(time.perf_counter() - started, 1)
        write_json(args.out, report)
        print(render_web(report))
        log(f"wrote {args.out}")
        return
    for name in args.dataset:
        report["datasets"][name] = run_dataset(name, args)
        report["total_seconds"] = round(time.perf_counter() - started, 1)
        write_json(args.out, report)
    print(render(report))
    log(f"wrote {args.out}")
