"""The database: where it is, its pools, its migrations.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

# The embedded server's settings the sizing rule owns (backend/db/tuning.py); the only names
# EMBEDDED_DB_SETTINGS may override.
TUNED = (
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "autovacuum_work_mem",
    "max_parallel_workers",
    "max_parallel_workers_per_gather",
    "max_parallel_maintenance_workers",
)


class TuningError(ValueError):
    """An override names a setting the sizing rule does not own, or has an unsafe value."""


def check_overrides(overrides: dict[str, str]) -> None:
    """Raise TuningError unless every override names a TUNED setting with a value safe in a conf line."""
    for name, value in overrides.items():
        if name not in TUNED:
            raise TuningError(f"EMBEDDED_DB_SETTINGS: {name!r} is not one of {', '.join(TUNED)}")
        if not value or any(c in value for c in "'\n\\#"):
            raise TuningError(f"EMBEDDED_DB_SETTINGS: unsafe value for {name}: {value!r}")


class DatabaseSettings(BaseModel):
    # --- database -------------------------------------------------------------------------------
    database_url: str = Field(default="", description="Empty: start the embedded PostgreSQL.")
    database_read_url: str = Field(
        default="", description="A read replica for searches; empty: searches use DATABASE_URL."
    )
    database_pooler: Literal["session", "transaction"] | None = Field(
        default=None,
        description="transaction: a transaction-mode pooler (Supabase port 6543, pgbouncer) is in front, "
        "so no server-side prepared statements and no session settings. None: transaction when the "
        "URL's port is 6543, else session.",
    )
    embedded_db_dir: Path = Path("./.data/postgres")
    # The embedded server's memory and parallel workers (backend/db/tuning.py; README "Memory").
    embedded_db_memory_mb: int | None = Field(
        default=None,
        ge=256,
        description="Memory to size the embedded server for (shared_buffers 1/4, effective_cache_size "
        "3/4, ...); None: the machine's (MemTotal or the cgroup limit). Lower it on a shared host.",
    )
    embedded_db_cpus: int | None = Field(
        default=None, ge=1, description="CPUs to size the parallel workers for; None: those usable."
    )
    embedded_db_settings: dict[str, str] = Field(
        default_factory=dict,
        description='Single values over the sizing rule, as JSON: {"work_mem": "64MB"}; names: '
        + ", ".join(TUNED)
        + ". A DBA's ALTER SYSTEM overrides both.",
    )
    embedded_db_prewarm: bool = Field(
        default=True,
        description="After this process starts the embedded server, walk its HNSW indexes once in the "
        "background so the first searches do not read them from disk (backend/db/prewarm.py).",
    )
    db_pool_min_size: int = Field(default=1, ge=1)
    db_pool_max_size: int = Field(
        default=10,
        ge=1,
        description="Connections this process keeps at most. On a database of few cores, about its cores + 1 "
        "serves more searches a second than more connections would (docs/scaling.md, 'Connections').",
    )
    db_statement_timeout_ms: int = Field(default=30_000, ge=0)
    auto_migrate: bool | None = Field(
        default=None,
        description="Apply pending migrations when the API or a CLI command starts. None: on for the "
        "embedded database, off for DATABASE_URL (deploys migrate explicitly: `db upgrade`, "
        "`alembic upgrade head` or `supabase db push`).",
    )
    # A local Citus cluster (`python -m backend cluster`, `make test-distributed`; docs/scaling.md).
    citus_src: Path | None = Field(
        default=None, description="A Citus source folder to build against the embedded PostgreSQL."
    )
    citus_build_dir: Path = Field(
        default=Path("./.data/citus-build"),
        description="Citus builds, one per commit and PostgreSQL version.",
    )
    cluster_dir: Path = Path("./.data/cluster")
    cluster_port: int = Field(
        default=55432, ge=1024, le=65000, description="Coordinator; workers: the next ports."
    )
    cluster_workers: int = Field(default=2, ge=1, le=16)

    @field_validator("embedded_db_settings")
    @classmethod
    def _known_settings(cls, value: dict[str, str]) -> dict[str, str]:
        try:
            check_overrides(value)
        except TuningError as exc:
            raise ValueError(str(exc)) from exc
        return value
