"""What every benchmark shares: where data lives, progress logging, and the modules of this package."""

from __future__ import annotations

import sys

from backend import PROJECT_ROOT

DATASETS_DIR = PROJECT_ROOT.parent / "shared" / "datasets"
BENCH_SERVER_DIR = PROJECT_ROOT / ".data" / "bench-postgres"
CACHE_DIR = PROJECT_ROOT / ".data" / "bench-cache"
RESULTS_DIR = PROJECT_ROOT / "bench" / "results"


def log(message: str) -> None:
    """Progress goes to stderr, so stdout stays clean Markdown."""
    print(message, file=sys.stderr, flush=True)
