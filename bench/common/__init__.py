"""What every benchmark shares: where data lives, the settings it runs with, progress logging."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from backend import PROJECT_ROOT
from backend.config import Settings

# The development sets: BENCH_DATASETS_DIR, else ../shared/datasets beside the checkout (a worktree
# elsewhere sets the variable, or passes --datasets-dir where a bench takes it).
DATASETS_DIR = Path(os.environ.get("BENCH_DATASETS_DIR") or PROJECT_ROOT.parent / "shared" / "datasets")
BENCH_SERVER_DIR = PROJECT_ROOT / ".data" / "bench-postgres"
CACHE_DIR = PROJECT_ROOT / ".data" / "bench-cache"
RESULTS_DIR = PROJECT_ROOT / "bench" / "results"


def bench_settings(**overrides: Any) -> Settings:
    """Defaults plus RAG_* environment variables, no .env: what a deploy without overrides runs."""
    return Settings(_env_file=None, embedding_provider="local", llm_provider="extractive", **overrides)


def log(message: str) -> None:
    """Progress goes to stderr, so stdout stays clean Markdown."""
    print(message, file=sys.stderr, flush=True)
