"""The embedded server's memory and parallelism, sized from the machine it runs on.

PostgreSQL's defaults (shared_buffers 128MB, work_mem 4MB, maintenance_work_mem 64MB) are sized for
a machine of the 2000s: on them a 1M-chunk corpus (HNSW index ~2 GB, heap ~3 GB) is read from the
OS cache on every search, and an HNSW build spills its graph. The rule is the one PostgreSQL's docs
and pgtune give for a dedicated server — shared_buffers a quarter of the memory, the planner told
that three quarters are cache — with work_mem bounded so that every connection can sort three
things at once without swapping. The values are written to `pgrag.conf` in the data directory
(included from postgresql.conf), so a DBA's `ALTER SYSTEM` still wins (postgresql.auto.conf is read
after it); EMBEDDED_DB_MEMORY_MB / EMBEDDED_DB_CPUS size for less than the machine (a shared host),
EMBEDDED_DB_SETTINGS overrides single values. shared_buffers needs a restart (`db stop`): a server
already running keeps its old value until then; a freshly created one is restarted at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from backend.settings.database import check_overrides

MB = 1024 * 1024
CONF_FILE = "pgrag.conf"
INCLUDE_LINE = f"include_if_exists = '{CONF_FILE}'  # pgrag: sized from the machine (backend/db/tuning.py)"
MAX_CONNECTIONS = 100  # the embedded server's default, which the work_mem rule divides by


@dataclass(frozen=True)
class Machine:
    memory_bytes: int
    cpus: int


def detect_machine(meminfo: Path = Path("/proc/meminfo"), cgroup: Path = Path("/sys/fs/cgroup")) -> Machine:
    """The memory (MemTotal, or a lower cgroup limit) and the CPUs this process may use."""
    memory = 0
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    limit = cgroup / "memory.max"
    if limit.exists() and (text := limit.read_text().strip()).isdigit():
        memory = min(memory, int(text)) if memory else int(text)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return Machine(memory_bytes=memory or 2048 * MB, cpus=max(1, cpus))


def sized_settings(machine: Machine, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The sized values (PostgreSQL units, MB), then the overrides, which must be among TUNED."""
    mem_mb = machine.memory_bytes // MB
    shared = max(128, mem_mb // 4)
    work = min(256, max(4, (mem_mb - shared) // (MAX_CONNECTIONS * 3)))
    half = max(1, machine.cpus // 2)
    out = {
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{max(512, mem_mb * 3 // 4)}MB",
        "work_mem": f"{work}MB",
        # an HNSW build keeps its graph here (1M × 384-d: ~2.5 GB); pgtune's 2 GB cap is for btrees
        "maintenance_work_mem": f"{min(4096, max(64, mem_mb // 8))}MB",
        # autovacuum's workers (3) would each take maintenance_work_mem otherwise
        "autovacuum_work_mem": f"{min(1024, max(64, mem_mb // 64))}MB",
        "max_parallel_workers": str(machine.cpus),
        "max_parallel_workers_per_gather": str(half),
        "max_parallel_maintenance_workers": str(half),
    }
    check_overrides(overrides or {})
    return {**out, **(overrides or {})}


def embedded_settings(memory_mb: int | None, cpus: int | None, overrides: dict[str, str]) -> dict[str, str]:
    """The sizing for the Settings' EMBEDDED_DB_MEMORY_MB / _CPUS (None: the machine's) and overrides."""
    found = detect_machine()
    machine = Machine(
        memory_bytes=memory_mb * MB if memory_mb else found.memory_bytes, cpus=cpus or found.cpus
    )
    return sized_settings(machine, overrides)


def write_conf(data_dir: Path, values: dict[str, str]) -> bool:
    """Write pgrag.conf and include it from postgresql.conf; True when anything changed."""
    conf = data_dir / CONF_FILE
    text = "# Written by pgrag (backend/db/tuning.py) at each start; ALTER SYSTEM overrides it.\n" + "".join(
        f"{name} = '{value}'\n" for name, value in values.items()
    )
    changed = not conf.exists() or conf.read_text() != text
    if changed:
        conf.write_text(text)
    main = data_dir / "postgresql.conf"
    lines = main.read_text().splitlines()
    if INCLUDE_LINE not in lines:
        main.write_text("\n".join([*lines, INCLUDE_LINE]) + "\n")
        changed = True
    return changed
