"""Shared benchmark helpers: BEIR datasets, document-level metrics, scratch databases, Markdown."""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from psycopg import sql

from backend import PROJECT_ROOT
from backend.db import migrations
from backend.db.embedded import start_embedded_server, stop_embedded_server

DATASETS_DIR = PROJECT_ROOT.parent / "shared" / "datasets"
BENCH_SERVER_DIR = PROJECT_ROOT / ".data" / "bench-postgres"
CACHE_DIR = PROJECT_ROOT / ".data" / "bench-cache"
RESULTS_DIR = PROJECT_ROOT / "bench" / "results"
CUTOFFS = (1, 5, 10)


# --- datasets ---------------------------------------------------------------------------------------


@dataclass
class Dataset:
    name: str
    path: Path
    queries: list[tuple[str, str]]  # (query id, text), file order
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: relevance}

    @property
    def corpus_path(self) -> Path:
        return self.path / "corpus.jsonl"


def dataset_names(root: Path = DATASETS_DIR) -> list[str]:
    """Every folder under root that holds a BEIR corpus."""
    return sorted(p.parent.name for p in root.glob("*/corpus.jsonl"))


def load_dataset(name: str, root: Path = DATASETS_DIR, limit_queries: int | None = None) -> Dataset:
    """Queries and qrels of one BEIR folder; queries without a relevant document are skipped."""
    path = root / name
    qrels: dict[str, dict[str, int]] = {}
    with (path / "qrels.tsv").open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)  # header: query-id corpus-id score
        for qid, doc_id, score in reader:
            if int(score) > 0:
                qrels.setdefault(qid, {})[doc_id] = int(score)
    queries = []
    with (path / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if str(row["_id"]) in qrels:
                    queries.append((str(row["_id"]), row["text"]))
    if limit_queries is not None:
        queries = queries[:limit_queries]
    return Dataset(name, path, queries, qrels)


def count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


# --- metrics ----------------------------------------------------------------------------------------


def first_occurrences(ids: Iterable[str]) -> list[str]:
    """Document ids in rank order, each kept at its first (best) chunk."""
    return list(dict.fromkeys(ids))


def score_ranking(ranked_chunk_docs: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """Recall@1/5/10, MRR@10 and nDCG@10 of one query, at document level."""
    docs = first_occurrences(ranked_chunk_docs)[:10]
    out = {f"recall@{k}": sum(1 for d in docs[:k] if d in relevant) / len(relevant) for k in CUTOFFS}
    out["mrr@10"] = next((1.0 / (i + 1) for i, d in enumerate(docs) if d in relevant), 0.0)
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(docs))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    out["ndcg@10"] = dcg / idcg if idcg else 0.0
    return out


def mean_scores(per_query: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each metric averaged over the queries."""
    if not per_query:
        return {}
    return {key: sum(q[key] for q in per_query) / len(per_query) for key in per_query[0]}


# --- the scratch database ---------------------------------------------------------------------------


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_health(proc: subprocess.Popen, base: str, what: str, timeout: float = 120) -> None:
    """Return once GET {base}/health answers 200; raise if proc exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"{what} did not answer /health within {timeout:.0f} s")


def tune_bench_server(shared_buffers: str) -> str:
    """The benchmark server with this shared_buffers (ALTER SYSTEM + restart when it differs)."""
    server = start_embedded_server(BENCH_SERVER_DIR)
    with psycopg.connect(server, autocommit=True) as conn:
        current = conn.execute("select pg_size_bytes(current_setting('shared_buffers'))").fetchone()[0]
        wanted = conn.execute("select pg_size_bytes(%s)", (shared_buffers,)).fetchone()[0]
        if current == wanted:
            return server
        conn.execute(sql.SQL("alter system set shared_buffers = {}").format(sql.Literal(shared_buffers)))
    log(f"restarting the benchmark server with shared_buffers = {shared_buffers}")
    stop_embedded_server(BENCH_SERVER_DIR)
    return start_embedded_server(BENCH_SERVER_DIR)


@contextmanager
def scratch_database(label: str, *, keep: bool = False) -> Iterator[str]:
    """A fresh, migrated database on the benchmark's embedded server; dropped afterwards unless keep."""
    server = start_embedded_server(BENCH_SERVER_DIR)
    name = f"bench_{label.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        # The name is ours (letters, digits, _), never user input.
        conn.execute(f'create database "{name}"')
    url = with_database(server, name)
    try:
        migrations.upgrade(url)
        yield url
    finally:
        if keep:
            log(f"kept database {name}")
        else:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f'drop database if exists "{name}" with (force)')


# --- reporting --------------------------------------------------------------------------------------


def machine() -> dict[str, object]:
    """What ran the benchmark: core count and CPU model (noisy neighbours are not visible here)."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version()}


def code_version() -> str:
    """The commit measured, with "+dirty" when backend/, sql/ or supabase/ differ from it."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "backend", "sql", "supabase")
    return f"{head}+dirty" if dirty else head


def command_line(module: str) -> str:
    """The command as typed, for the report."""
    return " ".join([".venv/bin/python -m", module, *sys.argv[1:]])


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub Markdown table; align is one character per column (l or r), default l then r."""
    align = align or "l" + "r" * (len(headers) - 1)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def log(message: str) -> None:
    """Progress goes to stderr, so stdout stays clean Markdown."""
    print(message, file=sys.stderr, flush=True)


def write_json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    tmp.replace(path)
