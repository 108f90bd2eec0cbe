"""The soak's closed-loop request mix, the recorder of its calls, and the server-side sampler.

A worker runs one action after another with no think time: search, chat (new or follow-up), list
documents, read a conversation back, post a small document then delete it, or a bad request whose
expected 4xx counts as success. The sampler reads the server's RSS from /proc and its PostgreSQL
backends from pg_stat_activity every few seconds, and closes the recorder's interval.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg

from backend.text import detect_lang
from bench.common import log

# Action weights (percent of actions; ingest_delete makes two calls).
MIX = {
    "search": 35,
    "chat": 15,
    "chat_followup": 10,
    "list_documents": 10,
    "read_messages": 10,
    "ingest_delete": 5,
    "bad_request": 15,
}
FOLLOW_UPS = {
    "zh": ["能再详细说说吗？", "它为什么重要？", "那它在哪里？", "还有别的例子吗？"],
    "en": ["Can you tell me more about that?", "Why is that?", "Where was that?", "Who else was involved?"],
}
MAX_TURNS = 3  # a conversation gets at most this many user turns, so history reads stay bounded


def percentiles(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    p50, p95 = np.percentile(np.asarray(values), [50, 95])
    return round(float(p50), 1), round(float(p95), 1)


@dataclass
class EndpointTotals:
    requests: int = 0
    errors: int = 0
    statuses: Counter = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)


class Recorder:
    """Every call, per endpoint label: the open interval (drained by the sampler) and running totals."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._interval: dict[str, list[tuple[bool, float]]] = defaultdict(list)
        self.totals: dict[str, EndpointTotals] = defaultdict(EndpointTotals)

    def add(self, endpoint: str, status: int, ok: bool, ms: float) -> None:
        with self._lock:
            self._interval[endpoint].append((ok, ms))
            t = self.totals[endpoint]
            t.requests += 1
            t.errors += not ok
            t.statuses[status] += 1
            t.latencies_ms.append(ms)

    def drain(self) -> dict[str, list[tuple[bool, float]]]:
        with self._lock:
            out, self._interval = dict(self._interval), defaultdict(list)
        return out


class Worker:
    """One client thread: its own HTTP connection, conversations and documents."""

    def __init__(
        self, base_url: str, questions: Sequence[str], recorder: Recorder, worker_id: int, seed: int
    ) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=120)
        self.questions = questions
        self.recorder = recorder
        self.id = worker_id
        self.rng = random.Random(seed * 1000 + worker_id)
        self.open_conversations: dict[str, tuple[str, int]] = {}  # id -> (language, user turns)
        self.known_conversations: deque[str] = deque(maxlen=50)
        self.posted = 0
        self.errors_logged = 0

    def run(self, deadline: float) -> None:
        actions: dict[str, Callable[[], None]] = {name: getattr(self, name) for name in MIX}
        names, weights = list(MIX), list(MIX.values())
        try:
            while time.monotonic() < deadline:
                actions[self.rng.choices(names, weights)[0]]()
        finally:
            self.client.close()

    def call(
        self, label: str, method: str, path: str, expect: int, body: Any = None
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = self.client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            self.recorder.add(label, 0, False, (time.perf_counter() - started) * 1000)
            self._log_error(label, f"{type(exc).__name__}: {exc}")
            return None
        ok = response.status_code == expect
        self.recorder.add(label, response.status_code, ok, (time.perf_counter() - started) * 1000)
        if not ok:
            self._log_error(label, f"HTTP {response.status_code}: {response.text[:200]}")
        return response if ok else None

    def _log_error(self, label: str, message: str) -> None:
        if self.errors_logged < 5:
            self.errors_logged += 1
            log(f"  worker {self.id}: {label}: {message}")

    # --- the actions -------------------------------------------------------------------------------

    def search(self) -> None:
        self.call("POST /search", "POST", "/search", 200, {"query": self.rng.choice(self.questions)})

    def chat(self) -> None:
        question = self.rng.choice(self.questions)
        response = self.call("POST /chat", "POST", "/chat", 200, {"message": question})
        if response is not None:
            conversation = response.json()["conversation_id"]
            self.open_conversations[conversation] = ("en" if detect_lang(question) == "en" else "zh", 1)
            self.known_conversations.append(conversation)

    def chat_followup(self) -> None:
        if not self.open_conversations:
            return self.chat()
        conversation = self.rng.choice(list(self.open_conversations))
        lang, turns = self.open_conversations.pop(conversation)
        body = {"message": self.rng.choice(FOLLOW_UPS[lang]), "conversation_id": conversation}
        if self.call("POST /chat (follow-up)", "POST", "/chat", 200, body) and turns + 1 < MAX_TURNS:
            self.open_conversations[conversation] = (lang, turns + 1)
        return None

    def list_documents(self) -> None:
        self.call("GET /documents", "GET", f"/documents?limit=20&offset={self.rng.randrange(0, 20)}", 200)

    def read_messages(self) -> None:
        if not self.known_conversations:
            return self.chat()
        conversation = self.rng.choice(self.known_conversations)
        self.call("GET /conversations/{id}/messages", "GET", f"/conversations/{conversation}/messages", 200)
        return None

    def ingest_delete(self) -> None:
        self.posted += 1
        n = f"{self.id}-{self.posted}-{uuid.uuid4().hex[:8]}"
        body = {
            "title": f"soak note {n}",
            "content": f"# 压力测试笔记 {n}\n\n线程 {self.id} 写入这段文字，随后立即删除。"
            f"This note {n} is written by the soak benchmark and deleted right away.",
            "external_id": f"soak-{n}",
            "source": "soak",
        }
        response = self.call("POST /documents", "POST", "/documents", 200, body)
        if response is not None:
            document = response.json()["documents"][0]["document_id"]
            self.call("DELETE /documents/{id}", "DELETE", f"/documents/{document}", 204)

    def bad_request(self) -> None:
        unknown = uuid.uuid4()
        label, method, path, expect, body = self.rng.choice(
            [
                ("POST /search: empty query", "POST", "/search", 422, {"query": ""}),
                ("POST /search: top_k 0", "POST", "/search", 422, {"query": "x", "top_k": 0}),
                ("POST /chat: no message", "POST", "/chat", 422, {}),
                ("POST /chat: unknown conversation", "POST", "/chat", 404,
                 {"message": "还有吗？", "conversation_id": str(unknown)}),
                ("GET /documents/{id}: unknown", "GET", f"/documents/{unknown}", 404, None),
                ("GET /documents/{id}: not a uuid", "GET", "/documents/not-a-uuid", 422, None),
                ("DELETE /documents/{id}: unknown", "DELETE", f"/documents/{unknown}", 404, None),
                ("GET /conversations/{id}/messages: unknown", "GET",
                 f"/conversations/{unknown}/messages", 404, None)
            ]
        )  # fmt: skip
        self.call(f"bad: {label} -> {expect}", method, path, expect, body)


# --- the server side ----------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (scanning /proc, so it needs no psutil)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def process_status(pid: int) -> dict[str, float]:
    """RSS (MB) and threads summed over the process tree, and the root's open file descriptors."""
    rss_kb = threads = 0
    for p in process_tree(pid):
        try:
            lines = Path(f"/proc/{p}/status").read_text().splitlines()
        except OSError:
            continue
        values = dict(line.split(":", 1) for line in lines if ":" in line)
        rss_kb += int(values.get("VmRSS", "0 kB").split()[0])
        threads += int(values.get("Threads", "0"))
    try:
        fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    except OSError:
        fds = 0
    return {"rss_mb": round(rss_kb / 1024, 1), "threads": threads, "fds": fds}


def postgres_backends(conn: psycopg.Connection, application_name: str) -> dict[str, int]:
    """The server's backends (by application_name), its active ones, and every other on the database."""
    row = conn.execute(
        "select count(*) filter (where application_name = %(app)s), "
        "count(*) filter (where application_name = %(app)s and state = 'active'), count(*) "
        "from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
        {"app": application_name},
    ).fetchone()
    assert row is not None
    return {"pg_server": row[0], "pg_server_active": row[1], "pg_database": row[2]}


def take_sample(
    t: float, pid: int, conn: psycopg.Connection, application_name: str, recorder: Recorder
) -> dict[str, Any]:
    """One row of the curve: the server's state now, and the calls completed since the last row."""
    calls = recorder.drain()
    endpoints = {}
    for label, rows in sorted(calls.items()):
        p50, p95 = percentiles([ms for _, ms in rows])
        endpoints[label] = {
            "n": len(rows),
            "errors": sum(not ok for ok, _ in rows),
            "p50_ms": p50,
            "p95_ms": p95,
        }
    return {
        "t": round(t, 1),
        **process_status(pid),
        **postgres_backends(conn, application_name),
        "requests": sum(e["n"] for e in endpoints.values()),
        "errors": sum(e["errors"] for e in endpoints.values()),
        "endpoints": endpoints,
        "latencies_ms": {label: [ms for _, ms in rows] for label, rows in calls.items()},
    }
