"""The server's own configuration: reloaded after pgrag.conf changed (backend/db/tuning.py)."""

from __future__ import annotations

from typing import Any

import psycopg


def reload_configuration(conn: psycopg.Connection[Any]) -> list[str]:
    """Reload the configuration files; the settings that still wait for a restart (shared_buffers)."""
    conn.execute("select pg_reload_conf()")
    return [r[0] for r in conn.execute("select name from pg_settings where pending_restart")]
