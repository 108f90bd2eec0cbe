"""API servers the benchmarks start as their own processes (so the clients do not share their GIL)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from backend import PROJECT_ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(
    module_args: list[str],
    *,
    port: int = 0,
    cwd: Path = PROJECT_ROOT,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`python -m <module_args> --port N` (N = port, or a free one when 0) until the block ends.

    Yields (process, base URL) once GET /health answers 200; stops the server with SIGTERM (a
    graceful shutdown) on the way out, killing it after 30 s. Its output goes to log_path if given.
    """
    port = port or free_port()
    what = " ".join(module_args[:2]) + (f" (log: {log_path})" if log_path else "")
    with ExitStack() as stack:
        out = stack.enter_context(log_path.open("w")) if log_path else None
        proc = subprocess.Popen(
            [sys.executable, "-m", *module_args, "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(proc, base, what)
        yield proc, base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_for_health(proc: subprocess.Popen[bytes], base: str, what: str, timeout: float = 120) -> None:
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
    raise RuntimeError(f"{what} did not answer /health within {timeout:.0f} s")
