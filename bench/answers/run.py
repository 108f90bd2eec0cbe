"""Chat answers on the shared BEIR sets: gold answer strings and gold documents through /chat's path.

Usage: .venv/bin/python -m bench.answers [--dataset NAME ... | --all] [--sample N] [--seed S]
                                         [--embedder local|hashing] [--out bench/results/answers.json]
                                         [--via chat|v1]
       .venv/bin/python -m bench.answers --replay bench/results/answers.json

Per dataset: a scratch database, the whole corpus ingested (vectors from .data/bench-cache), then a
deterministic sample of questions through ChatService.chat with the extractive generator and default
settings. An answer scores when it contains a gold answer string (NFKC, case and whitespace folded,
[n] markers removed); a reply cites the gold document when a cited source's external_id is in qrels.
With --via v1 every question goes through POST /v1/chat/completions instead (the official `openai`
client against the app in-process, references off, web off): the figures must equal --via chat's.
The sources each question's generator saw are stored in --out, so --replay re-runs only the
generator on them (seconds, no database): for developing the generator, not for the record.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from backend.auth import LOCAL_IDENTITY
from backend.chat.citations import validate_citations
from backend.chat.service import ChatReply, ChatRequest
from backend.composition import Services, build_services
from backend.config import Settings
from backend.ingest.loaders import load_path
from backend.llm.base import LLM, Sampling, SourceText, Turn
from backend.llm.extractive import ExtractiveLLM
from bench.answers.report import render
from bench.answers.scoring import Judged, as_record, judge, load_answers, sample_ids, summarise
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import dataset_names, load_dataset
from bench.common.db import scratch_database
from bench.common.report import code_version, command_line, machine, write_json
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached, make_embedder


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", action="extend", nargs="+", help="folders under --datasets-dir")
    which.add_argument("--all", action="store_true", help="every dataset under --datasets-dir")
    which.add_argument("--replay", type=Path, help="re-run the generator on the contexts of this result file")
    parser.add_argument("--sample", type=int, default=200, help="questions per set (0: all)")
    parser.add_argument("--seed", default="answers-v1", help="the sample's hash seed")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/answers[-replay].json")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--examples", type=int, default=3, help="failure examples per cause in the report")
    parser.add_argument(
        "--via", choices=("chat", "v1"), default="chat", help="ChatService.chat, or /v1/chat/completions"
    )
    args = parser.parse_args(argv)
    if not args.dataset and not args.replay:
        args.dataset = dataset_names(args.datasets_dir) if args.all else ["xquad-zh-dev"]
    if args.out is None:
        args.out = RESULTS_DIR / ("answers-replay.json" if args.replay else "answers.json")
    return args


class RecordingLLM:
    """The generator under test, passed through unchanged, keeping the sources of the last answer."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.generator = inner.generator
        self.last_sources: list[SourceText] = []

    def answer(
        self,
        question: str,
        sources: Sequence[SourceText],
        history: Sequence[Turn] = (),
        sampling: Sampling | None = None,
    ) -> Iterator[str]:
        self.last_sources = list(sources)
        return self.inner.answer(question, sources, history, sampling)

    def complete(self, system: str, prompt: str) -> str | None:
        return self.inner.complete(system, prompt)

    def complete_json(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        return self.inner.complete_json(system, prompt, schema)


def run_dataset(name: str, settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    code = code_version()
    dataset = load_dataset(name, args.datasets_dir)
    answers = load_answers(dataset.path / "answers.jsonl")
    texts = dict(dataset.queries)
    ids = sample_ids([q for q in texts if q in answers], args.sample or None, args.seed)
    inner = make_embedder(args.embedder, settings)
    cache = BenchCache(inner.model_id, name)
    embedder = CachedEmbedder(inner, cache)
    llm = RecordingLLM(ExtractiveLLM())
    log(f"{name}: {len(ids)} sampled questions; cache {cache.path} ({len(cache.passages)} passages)")
    items = []
    with scratch_database(f"answers_{name}") as url:
        if args.via == "v1":  # the bench is one client asking as fast as it can: no per-minute limit
            settings = type(settings).model_validate(
                {**settings.model_dump(), "rate_limit_chat_per_minute": 0}
            )
        services = build_services(settings, database_url=url, embedder=embedder, llm=llm, migrate=False)
        ask = _chat if args.via == "chat" else _through_v1(services)
        try:
            summary = ingest_cached(services, load_path(dataset.corpus_path), name)
            ingest = {"seconds": round(summary.seconds, 3), **summary.counts}
            log(f"  {name}: ingested in {ingest['seconds']:.1f} s")
            started = time.perf_counter()
            for k, qid in enumerate(ids, 1):
                llm.last_sources = []
                reply = ask(services, texts[qid])
                by_n = {s["n"]: s for s in reply.sources}
                context = [
                    {
                        "n": s.n,
                        "external_id": by_n[s.n]["external_id"],
                        "title": s.title,
                        "heading": s.heading,
                        "content": s.content,
                    }
                    for s in (llm.last_sources if reply.generator == llm.generator else [])
                ]
                item = Judged(
                    qid=qid,
                    question=texts[qid],
                    golds=answers[qid],
                    gold_docs=sorted(dataset.qrels[qid]),
                    generator=reply.generator,
                    answer=reply.answer,
                    cited_docs=[s["external_id"] for s in reply.sources if s["cited"]],
                    context=context,
                    # every numbered source (context + extra), for replays to resolve citations
                    numbered=[s["external_id"] for s in reply.sources],
                )
                items.append(judge(item))
                if k % 50 == 0:
                    log(f"  {name}: {k}/{len(ids)} chats")
            chat_seconds = time.perf_counter() - started
            cache.save()
        finally:
            services.close()
    return {
        "code": code,
        "ingest": ingest,
        "chat_seconds": round(chat_seconds, 1),
        "summary": summarise(items),
        "items": [as_record(i) for i in items],
    }


def _chat(services: Services, question: str) -> ChatReply:
    """One /chat turn as the local user, web off (the documents' own answer is what is measured)."""
    return asyncio.run(services.chat.chat(ChatRequest(message=question, web=False), identity=LOCAL_IDENTITY))


def _through_v1(services: Services) -> Callable[[Services, str], ChatReply]:
    """Ask through /v1/chat/completions with the official openai client (the app in-process)."""
    import openai
    from fastapi.testclient import TestClient

    from backend.api.app import create_app
    from backend.chat.diagnostics import ChatDiagnostics

    http = TestClient(create_app(services=services))
    client = openai.OpenAI(base_url="http://testserver/v1", api_key="bench", http_client=http, max_retries=0)

    def ask(_: Services, question: str) -> ChatReply:
        completion = client.chat.completions.create(
            model="pgrag",
            messages=[{"role": "user", "content": question}],
            extra_body={"pgrag": {"references": False, "web": False}},
        )
        extension = (completion.model_extra or {})["pgrag"]
        return ChatReply(
            conversation_id=uuid.UUID(extension["conversation_id"]),
            message_id=uuid.UUID(extension["message_id"]),
            answer=completion.choices[0].message.content or "",
            sources=extension["sources"],
            generator=extension["generator"],
            diagnostics=cast(ChatDiagnostics, None),  # not used by the bench
        )

    return ask


def replay(path: Path) -> dict[str, Any]:
    """The stored contexts through today's generator; fixed replies (not found, clarify) kept as they were."""
    report = json.loads(path.read_text(encoding="utf-8"))
    llm = ExtractiveLLM()
    for result in report["datasets"].values():
        items = []
        for record in result["items"]:
            item = Judged(**{**record, "has_gold": False, "cites_gold_doc": False, "cause": None})
            if item.generator == llm.generator and item.context:
                sources = [SourceText(s["n"], s["title"], s["heading"], s["content"]) for s in item.context]
                raw = "".join(llm.answer(item.question, sources))
                item.answer, cited, _removed = validate_citations(raw, len(item.numbered))
                item.cited_docs = [item.numbered[n - 1] for n in sorted(cited)]
            items.append(judge(item))
        result["summary"] = summarise(items)
        result["items"] = [as_record(i) for i in items]
    report["command"] = command_line("bench.answers")
    report["replayed_from"] = {"file": str(path), "code": report.get("code")}
    report["code"] = code_version()
    return report


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.replay:
        report = replay(args.replay)
    else:
        settings = bench_settings()
        started = time.perf_counter()
        report = {
            "command": command_line("bench.answers"),
            "code": code_version(),
            "machine": machine(),
            "sample": args.sample,
            "seed": args.seed,
            "datasets": {},
        }
        for name in args.dataset:
            report["datasets"][name] = run_dataset(name, settings, args)
            report["total_seconds"] = round(time.perf_counter() - started, 1)
            write_json(args.out, report)
    write_json(args.out, report)
    print(render(report, examples=args.examples))
    log(f"wrote {args.out}")
