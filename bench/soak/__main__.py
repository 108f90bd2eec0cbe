"""Soak: the real API server under a mixed closed-loop load, its memory and connections sampled.

Usage: .venv/bin/python -m bench.soak [--minutes 10] [--concurrency 4] [--warmup-minutes 1]
           [--pool-max-size N] [--docs 12] [--dataset cmrc2018-dev xquad-en-dev] [--sample-seconds 5]

A scratch database on the benchmark's embedded server gets the demo corpus plus the first --docs
documents of each dataset (their vectors kept in .data/bench-cache, so only the first run pays for
the local model). Then `python -m backend serve` runs as its own process (local embedder, extractive
answers, DB_POOL_MAX_SIZE=--pool-max-size, no .env) while --concurrency client threads send the mix
of bench/soak/load.py for --minutes. Every --sample-seconds: the server's RSS (process tree, from
/proc), its PostgreSQL backends (pg_stat_activity, by application_name), requests, errors and
latency per endpoint. The report gives the RSS curve and its least-squares slope after the warm-up.
Markdown to stdout and bench/results/soak.md, JSON to bench/results/soak.json.

Against a large corpus: `--reuse-latency-db 1000000` runs it on the latency benchmark's kept
database (bench_latency_1000000_384 on .data/bench-postgres, loaded by `bench.latency --keep-db`),
`--database-url URL` on any migrated database. The soak's documents are ingested into it as usual
and deleted when the run ends (the kept corpus is left as it was).
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from backend.cli.ingest_commands import iter_inputs
from backend.cli.server_commands import DEMO_CORPUS
from backend.config import Settings
from backend.embeddings import LocalEmbedder
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_path
from bench.common import DATASETS_DIR, RESULTS_DIR, bench_settings, log
from bench.common.beir import load_dataset
from bench.common.db import bench_server, scratch_database, services, with_database
from bench.common.report import run_record, write_json
from bench.common.server import serve
from bench.common.vectors import BenchCache, CachedEmbedder, ingest_cached
from bench.latency.load import database_name as latency_database_name
from bench.soak.load import Recorder, Worker, postgres_backends, process_status, take_sample
from bench.soak.report import render, summarize

APPLICATION_NAME = "pgrag-soak-server"
DEMO_QUESTIONS = [
    "三阶段检索分别做什么？",
    "pgrag 的作者是谁？",
    "how do I tune hybrid_search?",
    "How do I deploy pgrag to production?",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="load duration, warm-up included")
    parser.add_argument("--warmup-minutes", type=float, default=1.0, help="excluded from the slope")
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument(
        "--pool-max-size", type=int, default=None, help="DB_POOL_MAX_SIZE; default: the setting's"
    )
    parser.add_argument("--dataset", nargs="+", default=["cmrc2018-dev", "xquad-en-dev"])
    parser.add_argument("--docs", type=int, default=12, help="documents taken from each dataset")
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--table-seconds", type=float, default=30.0, help="rows of the Markdown curve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=0, help="the API server's port (default: a free one)")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "soak.json")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--database-url", help="a migrated database to soak instead of a scratch one")
    target.add_argument(
        "--reuse-latency-db",
        type=int,
        metavar="SIZE",
        help="the latency benchmark's kept database of SIZE chunks (384-d) on the benchmark server",
    )
    args = parser.parse_args(argv)
    if args.warmup_minutes >= args.minutes:
        parser.error("--warmup-minutes must be shorter than --minutes")
    return args


def with_application_name(url: str, name: str) -> str:
    """The URL with application_name set, so pg_stat_activity tells the server's backends apart."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("application_name", name)])))


def load_corpus(url: str, args: argparse.Namespace, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """The demo corpus and the first --docs documents of each dataset; returns stats (with the
    ids of the documents it created) and the questions."""
    model = LocalEmbedder(settings)
    embedder = CachedEmbedder(model, BenchCache(model.model_id, "demo-corpus"))
    questions = list(DEMO_QUESTIONS)
    stats: dict[str, Any] = {"documents": 0, "chunks": 0, "embedded": 0, "from_cache": 0}
    sources: list[tuple[str, list[LoadedDocument | LoadFailure]]] = [
        ("demo-corpus", list(iter_inputs([DEMO_CORPUS])))
    ]
    for name in args.dataset:
        docs = list(itertools.islice(load_path(args.datasets_dir / name / "corpus.jsonl"), args.docs))
        ids = {d.external_id for d in docs if isinstance(d, LoadedDocument)}
        dataset = load_dataset(name, args.datasets_dir)
        questions += [text for qid, text in dataset.queries if ids & set(dataset.qrels[qid])]
        sources.append((name, docs))
    stats["created"] = []
    with services(url, settings, embedder) as app:
        for name, items in sources:
            log(f"ingesting {len(items)} documents of {name} ...")
            embedder.cache = BenchCache(model.model_id, name)
            summary = ingest_cached(app, items, name)
            stats["documents"] += summary.counts["created"]
            stats["chunks"] += sum(o.chunks for o in summary.outcomes)
            stats["embedded"] += summary.chunks_embedded
            stats["from_cache"] += summary.chunks_from_cache
            stats["created"] += [o.document_id for o in summary.outcomes if o.status == "created"]
    return stats, questions


@contextmanager
def soak_database(args: argparse.Namespace) -> Iterator[tuple[str, list[uuid.UUID]]]:
    """A scratch database, or the one named (--database-url, --reuse-latency-db), and a list the caller
    fills with the ids of the documents the soak creates: in a named database they are deleted
    afterwards, their chunks and statistics with them."""
    created: list[uuid.UUID] = []
    if args.database_url is None and args.reuse_latency_db is None:
        with scratch_database("soak") as url:
            yield url, created
        return
    url = args.database_url or with_database(
        bench_server(), latency_database_name(args.reuse_latency_db, 384)
    )
    with psycopg.connect(url, autocommit=True) as conn:
        before = conn.execute("select count(*) from documents").fetchone()
    if before is None or not before[0]:
        name = urlsplit(url).path.lstrip("/")
        raise SystemExit(f"no documents in {name}: load it first (bench.latency --keep-db)")
    try:
        yield url, created
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("delete from documents where id = any(%s)", (created,))
        log(f"deleted the {len(created)} documents the soak created")


def reused_corpus(url: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """What a reused database held before the soak (its name and chunk count); None for a scratch one."""
    if args.database_url is None and args.reuse_latency_db is None:
        return None
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select current_database(), count(*) from chunks").fetchone()
    assert row is not None
    return {"database": row[0], "chunks": int(row[1])}


def run_load(
    base: str, pid: int, url: str, questions: list[str], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], Recorder]:
    """Worker threads for --minutes while the calling thread samples every --sample-seconds."""
    recorder = Recorder()
    with psycopg.connect(url, autocommit=True, application_name="pgrag-soak-sampler") as conn:
        started = time.monotonic()
        deadline = started + args.minutes * 60
        workers = [Worker(base, questions, recorder, i, args.seed) for i in range(args.concurrency)]
        threads = [threading.Thread(target=w.run, args=(deadline,), daemon=True) for w in workers]
        samples = [take_sample(0.0, pid, conn, APPLICATION_NAME, recorder)]
        for thread in threads:
            thread.start()
        for k in itertools.count(1):
            due = started + k * args.sample_seconds
            if due > deadline:
                break
            time.sleep(max(0.0, due - time.monotonic()))
            samples.append(take_sample(time.monotonic() - started, pid, conn, APPLICATION_NAME, recorder))
            s = samples[-1]
            log(
                f"  t={s['t']:6.0f}s  rss {s['rss_mb']:7.1f} MB  pg {s['pg_server']:2d}  "
                f"{s['requests']:4d} req  {s['errors']} err"
            )
        for thread in threads:
            thread.join()
        samples.append(take_sample(time.monotonic() - started, pid, conn, APPLICATION_NAME, recorder))
    return samples, recorder


def connections_after(url: str, seconds: float = 5.0) -> int:
    """The server's backends left once it has exited (0 when its pool closed them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + seconds
        left = postgres_backends(conn, APPLICATION_NAME)["pg_server"]
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = postgres_backends(conn, APPLICATION_NAME)["pg_server"]
    return left


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = bench_settings()
    pool_max = args.pool_max_size or settings.db_pool_max_size
    log_path = RESULTS_DIR / "soak-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "EMBEDDING_PROVIDER": "local",
        "LLM_PROVIDER": "extractive",
        "DB_POOL_MAX_SIZE": str(pool_max),
        "LOG_LEVEL": "WARNING",  # no access log: a line per request would be measured as server time
        # One caller sends the whole closed loop: the per-caller limits (30 chats a minute) would turn
        # the soak into a stream of 429s. 0: unlimited.
        **{f"RATE_LIMIT_{kind}_PER_MINUTE": "0" for kind in ("SEARCH", "CHAT", "RESEARCH", "INGEST")},
    }
    # Stopped with SIGTERM (a background job ignores SIGINT), the soak still deletes what it ingested
    # into a reused database and stops its server: the exit runs the context managers' cleanup.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with soak_database(args) as (url, created), tempfile.TemporaryDirectory() as workdir:
        before = reused_corpus(url, args)
        corpus, questions = load_corpus(url, args, settings)
        created.extend(corpus.pop("created"))
        if before is not None:
            corpus["reused"] = before
        log(f"corpus: {corpus}; {len(questions)} questions. starting the server ...")
        env["DATABASE_URL"] = with_application_name(url, APPLICATION_NAME)
        # In workdir, so that no .env applies.
        serve_args = ["backend", "serve", "--host", "127.0.0.1"]
        with serve(serve_args, port=args.port, cwd=Path(workdir), env=env, log_path=log_path) as (proc, base):
            idle = process_status(proc.pid)
            log(f"server pid {proc.pid} at {base}, {idle['rss_mb']} MB idle; load for {args.minutes} min")
            samples, recorder = run_load(base, proc.pid, url, questions, args)
        left = connections_after(url)
    exit_code = proc.returncode
    report = summarize(samples, recorder, args, idle=idle, pool_max=pool_max, left=left, exit_code=exit_code)
    report.update(
        **run_record("bench.soak"),
        corpus={**corpus, "questions": len(questions), "datasets": args.dataset, "docs_each": args.docs},
    )
    markdown = render(report, samples, args)
    print(markdown)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    rows = [{k: v for k, v in s.items() if k != "latencies_ms"} for s in samples]
    write_json(args.out, {**report, "samples": rows})
    log(f"wrote {args.out.with_suffix('.md')} and {args.out}")


if __name__ == "__main__":
    main()
