"""Untrusted files are parsed in a child process, bounded in time, memory and size.

A PDF whose pages share one heavy content stream took 32 s of CPU for 40 kB, in a server thread
nothing could stop; an HTML page nested 40,000 levels deep takes lexbor 10 s (its cost grows with the
square of the depth). So every PDF, every uploaded HTML file and every web page read in full is
parsed by backend/ingest/parsing.py in a child that (and so is every CSV and every Office or EPUB file)
  * is killed after PARSE_TIMEOUT_S of wall-clock time (RLIMIT_CPU backs that up inside the child),
  * cannot map more than PARSE_MEMORY_MB (RLIMIT_AS: an allocation past it fails with MemoryError),
  * refuses a PDF of more than PDF_MAX_PAGES pages before reading one, and stops extracting once the
    text passes MAX_DOCUMENT_CHARS,
  * refuses a zip-based file (.docx .pptx .xlsx .epub) that would unpack past PARSE_MAX_UNZIPPED_MB,
and each of these ends in ParseLimitExceeded (413) naming the setting.

The children are forked from a forkserver that imported pypdf and lexbor once (set_forkserver_preload),
so a parse costs a fork and a pipe, not an interpreter start (docs/benchmarks.md: per-PDF overhead).
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from backend.errors import ParseLimitExceeded, UnsupportedDocument
from backend.ingest import parsing
from backend.ingest.formats.builder import Parsed

if TYPE_CHECKING:  # the forkserver preloads this module: it imports no more than parsing needs
    from backend.config import Settings

_CONTEXT = multiprocessing.get_context("forkserver")
# Only the parsers: the server's own __main__ (the CLI, the app) stays out of the forkserver.
_CONTEXT.set_forkserver_preload(["backend.ingest.sandbox", "backend.ingest.parsing"])
_MEMORY_EXIT = 3  # the child ran out of PARSE_MEMORY_MB before it could say so
_POLL_S = 0.05  # how often a waiting parse checks whether its caller gave up
_START = threading.Lock()

Result = tuple[str | None, str]


@dataclass(frozen=True)
class ParseLimits:
    timeout_s: float = 30.0
    memory_mb: int = 1024
    max_pdf_pages: int = 2000
    max_chars: int = 2_000_000
    max_unzipped_mb: int = 256

    @classmethod
    def from_settings(cls, settings: Settings) -> ParseLimits:
        return cls(
            timeout_s=settings.parse_timeout_s,
            memory_mb=settings.parse_memory_mb,
            max_pdf_pages=settings.pdf_max_pages,
            max_chars=settings.max_document_chars,
            max_unzipped_mb=settings.parse_max_unzipped_mb,
        )


DEFAULT_LIMITS = ParseLimits()


def parse_document(kind: str, data: bytes, limits: ParseLimits) -> Parsed:
    """A file of one kind of parsing.document (pdf, html, csv, tsv, docx, pptx, xlsx, epub): its title,
    text and the places of its text; UnsupportedDocument or ParseLimitExceeded."""
    parsed: Parsed = _run(kind, data, limits)
    return parsed


def parse_pdf(data: bytes, limits: ParseLimits) -> Result:
    """A PDF's title and text; UnsupportedDocument or ParseLimitExceeded."""
    parsed = parse_document("pdf", data, limits)
    return parsed.title, parsed.text


def parse_html_document(data: bytes, limits: ParseLimits) -> Result:
    """An uploaded HTML file's title and readable text."""
    parsed = parse_document("html", data, limits)
    return parsed.title, parsed.text


async def parse_html_page(html: str, limits: ParseLimits) -> Result:
    """A web page's title and article text, without blocking the event loop; a cancelled caller
    stops the child within _POLL_S."""
    stop = threading.Event()
    try:
        result: Result = await asyncio.to_thread(_run, "page", html, limits, stop)
        return result
    except asyncio.CancelledError:
        stop.set()
        raise


def _run(kind: str, payload: bytes | str, limits: ParseLimits, stop: threading.Event | None = None) -> Any:
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child, args=(sender, kind, payload, limits), daemon=True)
    with _START, _main_module_hidden():
        child.start()
    sender.close()
    try:
        message = _wait(receiver, child, time.monotonic() + limits.timeout_s, stop)
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    return _outcome(message, child.exitcode, limits)


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """multiprocessing makes every forkserver child import the parent's __main__ (where a target
    function might live). The parsers live in modules; the server's main (the CLI, uvicorn's or
    pytest's script, a bench) is slow to import again and not always safe to (an unguarded script
    would run). A stand-in without a file or spec tells multiprocessing there is nothing to import;
    _START keeps concurrent starts from swapping it twice."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _wait(
    receiver: Connection, child: Any, deadline: float, stop: threading.Event | None
) -> tuple[Any, ...] | None:
    """The child's message; None when it died without one or the deadline passed (then it is killed)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (stop is not None and stop.is_set()):
            child.kill()
            return ("timeout",)
        try:
            if receiver.poll(min(remaining, _POLL_S) if stop is not None else remaining):
                message: tuple[Any, ...] = receiver.recv()
                return message
        except EOFError:
            return None  # it exited (or was killed) without a word


def _outcome(message: tuple[Any, ...] | None, exitcode: int | None, limits: ParseLimits) -> Any:
    if message is None:
        if exitcode == _MEMORY_EXIT:
            message = ("memory",)
        elif exitcode == -signal.SIGXCPU:
            message = ("timeout",)
        else:
            raise UnsupportedDocument(f"the parser stopped on this file (exit code {exitcode})")
    kind = message[0]
    if kind == "ok":
        return message[1]
    if kind == "unsupported":
        raise UnsupportedDocument(message[1])
    if kind == "limit":
        raise ParseLimitExceeded(f"{message[1]} ({message[2]})")
    if kind == "memory":
        raise ParseLimitExceeded(f"parsing the file needs more than {limits.memory_mb} MB (PARSE_MEMORY_MB)")
    raise ParseLimitExceeded(f"parsing the file takes longer than {limits.timeout_s:g} s (PARSE_TIMEOUT_S)")


def _child(sender: Connection, kind: str, payload: bytes | str, limits: ParseLimits) -> None:
    """In the child: limit itself, parse, send one message, exit."""
    memory = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = math.ceil(limits.timeout_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    try:
        sender.send(("ok", _parse(kind, payload, limits)))
    except parsing.LimitReached as exc:
        sender.send(("limit", str(exc), exc.setting))
    except UnsupportedDocument as exc:
        sender.send(("unsupported", str(exc)))
    except MemoryError:
        os._exit(_MEMORY_EXIT)
    except Exception as exc:  # lexbor, charset detection: any other failure is this file's
        if _peak_memory() >= 0.9 * memory:  # lexbor says "Can't parse HTML" when malloc fails
            os._exit(_MEMORY_EXIT)
        sender.send(("unsupported", f"cannot parse the file: {type(exc).__name__}: {exc}"[:500]))
    finally:
        sender.close()


def _parse(kind: str, payload: bytes | str, limits: ParseLimits) -> Result | Parsed:
    if isinstance(payload, str):
        return parsing.html_page_text(payload)
    return parsing.document(
        kind,
        payload,
        max_pages=limits.max_pdf_pages,
        max_chars=limits.max_chars,
        max_unzipped_bytes=limits.max_unzipped_mb * 1024 * 1024,
    )


def _peak_memory() -> int:
    """The most address space this process had mapped (VmPeak), in bytes; 0 when unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0
