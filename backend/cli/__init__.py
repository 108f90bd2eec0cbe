"""Command-line interface. Each sub-command lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings

from pydantic import ValidationError

from backend.cli import (
    calibrate_commands,
    cluster_commands,
    db_commands,
    ingest_commands,
    mcp_commands,
    query_commands,
    server_commands,
    sync_commands,
    worker_commands,
)
from backend.cli.errors import CliError

# Every command module is imported for real: one that fails to import is an error, not a missing command.
COMMAND_MODULES = (
    db_commands,
    ingest_commands,
    query_commands,
    server_commands,
    calibrate_commands,
    cluster_commands,
    mcp_commands,
    worker_commands,
    sync_commands,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m backend", description="Postgres-native RAG backend")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.handler(args) or 0)
    except ValidationError as exc:
        print(f"error: invalid settings: {_settings_message(exc)}", file=sys.stderr)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from backend.errors import DomainError

        if not isinstance(exc, DomainError) and not _is_db_error(exc):
            raise
        print(f"error: {exc}", file=sys.stderr)
    return 2


def _settings_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "settings"
        parts.append(f"{loc.upper()}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _is_db_error(exc: Exception) -> bool:
    import psycopg

    return isinstance(exc, psycopg.Error)
