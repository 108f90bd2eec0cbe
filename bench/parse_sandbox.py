"""What parsing untrusted files in the sandbox costs (backend/ingest/sandbox.py), and what it stops.

Usage: .venv/bin/python -m bench.parse_sandbox [--repeats N]
For ordinary PDFs (1, 20 and 200 text pages) and an HTML page: the median wall time in this process
and through the sandbox, and the CPU time of each (the sandbox's includes the forkserver and the
child). Then the hostile PDF of issue 24 (pages sharing one heavy content stream) and a deeply nested
HTML file: how long the unbounded parser takes and what the sandbox answers under its default limits.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from collections.abc import Callable
from functools import partial

from backend.errors import DomainError
from backend.ingest import parsing
from backend.ingest.sandbox import ParseLimits, parse_html_document, parse_pdf
from backend.testing.pdfs import shared_stream_pdf, text_pdf
from bench.common.report import markdown_table

LIMITS = ParseLimits()
SENTENCE = "Kangaroos hop across the southern islands and the western coast of Australia."


def _cpu_s() -> float:
    """CPU of this process, its reaped children, and the forkserver with its own children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # a child of ours: the forkserver (and the resource tracker)
            total += sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def _measure(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median wall ms, mean CPU ms) of `run`."""
    walls = []
    cpu = _cpu_s()
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        walls.append((time.perf_counter() - started) * 1000)
    return statistics.median(walls), (_cpu_s() - cpu) * 1000 / repeats


def _ordinary(repeats: int) -> list[list[str]]:
    rows = []
    parse_pdf(text_pdf(["warm-up"]), LIMITS)  # the forkserver starts once per process
    for pages in (1, 20, 200):
        data = text_pdf([f"{SENTENCE} Page {i}." for i in range(pages)])
        inline = _measure(partial(parsing.pdf_text, data, max_pages=10**6, max_chars=10**9), repeats)
        boxed = _measure(partial(parse_pdf, data, LIMITS), repeats)
        rows.append(_row(f"PDF, {pages} page(s), {len(data) // 1024} kB", inline, boxed))
    html = ("<html><body>" + f"<h2>Part</h2><p>{SENTENCE}</p>" * 2000 + "</body></html>").encode()
    inline = _measure(lambda: parsing.html_document_text(html, max_chars=10**9), repeats)
    boxed = _measure(lambda: parse_html_document(html, LIMITS), repeats)
    rows.append(_row(f"HTML, {len(html) // 1024} kB", inline, boxed))
    return rows


def _row(name: str, inline: tuple[float, float], boxed: tuple[float, float]) -> list[str]:
    return [
        name,
        f"{inline[0]:.1f}",
        f"{boxed[0]:.1f}",
        f"{boxed[0] - inline[0]:+.1f}",
        f"{inline[1]:.1f}",
        f"{boxed[1]:.1f}",
    ]


def _hostile() -> list[list[str]]:
    cases: list[tuple[str, bytes, Callable[[bytes], object], Callable[[bytes], object]]] = [
        (
            "PDF, 40 pages sharing one stream of 20,000 operators",
            shared_stream_pdf(pages=40, operators=20_000),
            lambda d: parsing.pdf_text(d, max_pages=10**6, max_chars=10**9),
            lambda d: parse_pdf(d, LIMITS),
        ),
        (
            "HTML, <div> nested 60,000 deep",
            b"<html><body>" + b"<div>x" * 60_000 + b"</div>" * 60_000 + b"</body></html>",
            lambda d: parsing.html_document_text(d, max_chars=10**9),
            lambda d: parse_html_document(d, LIMITS),
        ),
    ]
    rows = []
    for name, data, inline, boxed in cases:
        started = time.perf_counter()
        inline(data)
        unbounded = time.perf_counter() - started
        started = time.perf_counter()
        try:
            boxed(data)
            outcome = "read"
        except DomainError as exc:
            outcome = f"{exc.status_code}: {exc}"
        rows.append(
            [
                f"{name} ({len(data) // 1024} kB)",
                f"{unbounded:.1f}",
                f"{time.perf_counter() - started:.1f}",
                outcome,
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(
        markdown_table(
            ["file", "in process ms", "sandbox ms", "difference", "in process CPU ms", "sandbox CPU ms"],
            _ordinary(args.repeats),
        )
    )
    print()
    print(markdown_table(["hostile file", "unbounded s", "sandbox s", "sandbox answer"], _hostile()))


if __name__ == "__main__":
    main()
