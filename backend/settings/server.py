"""The HTTP surface, telemetry and the server process.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ServerSettings(BaseModel):
    # --- HTTP surface ------------------------------------------------------------------------------
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins a browser may call the API from (CORS allow-list); empty: none.",
    )
    rate_limit_search_per_minute: int = Field(default=120, ge=0, description="Per caller; 0: unlimited.")
    rate_limit_chat_per_minute: int = Field(default=30, ge=0)
    rate_limit_research_per_minute: int = Field(default=6, ge=0)
    rate_limit_ingest_per_minute: int = Field(default=60, ge=0)

    # --- telemetry (docs/telemetry.md) ------------------------------------------------------------
    metrics_enabled: bool = Field(
        default=True,
        description="Serve Prometheus metrics at GET /metrics (no sign-in, like /health: restrict it at "
        "the network or turn it off).",
    )
    embedding_warm_up: bool = Field(
        default=True, description="Load the local embedding model at start-up instead of on first use."
    )
    query_embedding_cache_size: int = Field(
        default=512, ge=0, le=1_000_000, description="Query vectors kept in memory (LRU); 0: no cache."
    )

    # --- server ----------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: str = "INFO"
