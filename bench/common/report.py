"""What a report records about its run (machine, commit, command) and how it writes Markdown and JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from backend import PROJECT_ROOT


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


def run_record(module: str) -> dict[str, Any]:
    """What every report starts with: the command as typed, the code measured, the machine."""
    return {"command": command_line(module), "code": code_version(), "machine": machine()}


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub Markdown table; align is one character per column (l or r), default l then r."""
    align = align or "l" + "r" * (len(headers) - 1)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def run_table(report: dict[str, Any]) -> str:
    """The machine, command and code of a report as a one-row table."""
    m = report["machine"]
    row = [f"{m['nproc']} cores, {m['cpu']}", f"`{report['command']}`", report["code"]]
    return markdown_table(["machine", "command", "code"], [row], "lll")


def write_json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    tmp.replace(path)


def write_records(
    run: dict[str, Any], args: Any, prefix: str, records: list[dict[str, Any]], markdown: str
) -> None:
    """A measuring command's report: <prefix>-<size>[-label].json (run_record, the arguments and the
    records) and .md (the table, also printed), in args.out_dir."""
    base = args.out_dir / f"{prefix}-{args.size}{'-' + args.label if args.label else ''}"
    write_json(
        base.with_suffix(".json"),
        {**run, "args": vars(args) | {"out_dir": str(args.out_dir)}, "records": records},
    )
    base.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown, end="", flush=True)
