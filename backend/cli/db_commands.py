"""`db upgrade | status | ship-sql | stop`: database lifecycle."""

from __future__ import annotations

import argparse

from backend.config import get_settings
from backend.db import migrations
from backend.db.connection import redact, resolve_database_url


def register(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser("db", help="database: migrate, inspect, ship SQL changes")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_sub.add_parser(
        "upgrade", help="apply pending migrations (starts the embedded server if needed)"
    ).set_defaults(handler=upgrade)
    db_sub.add_parser("status", help="where the database is and which migration it is at").set_defaults(
        handler=status
    )
    ship = db_sub.add_parser("ship-sql", help="write a new migration that installs the functions in sql/")
    ship.add_argument("name", help="migration name, e.g. tune_rrf_k")
    ship.set_defaults(handler=ship_sql)
    db_sub.add_parser("stop", help="stop the embedded server").set_defaults(handler=stop)


def _describe(settings) -> str:
    if settings.uses_embedded_db:
        return f"embedded PostgreSQL in {settings.embedded_db_dir.resolve()}"
    return f"external database {redact(settings.database_url)}"


def upgrade(args: argparse.Namespace) -> int:
    settings = get_settings()
    url = resolve_database_url(settings)
    before, after = migrations.upgrade(url)
    print(f"database: {_describe(settings)}")
    if before == after:
        print(f"schema: already at migration {after}; nothing to do")
    else:
        print(f"schema: migrated {before or 'empty database'} -> {after}")
    return 0


def status(args: argparse.Namespace) -> int:
    settings = get_settings()
    url = resolve_database_url(settings)
    current = migrations.current_revision(url)
    head = migrations.head_revision()
    print(f"database: {_describe(settings)}")
    print(f"connection: {redact(url)}")
    print(f"schema: at {current or 'nothing (empty database)'}; code ships {head}")
    return 0 if current == head else 1


def ship_sql(args: argparse.Namespace) -> int:
    from backend.cli import CliError

    try:
        path = migrations.new_function_migration(args.name)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    print(f"wrote {path.relative_to(migrations.MIGRATIONS_DIR.parent.parent)} and its Alembic revision;")
    print("apply with: python -m backend db upgrade")
    return 0


def stop(args: argparse.Namespace) -> int:
    from backend.db.embedded import stop_embedded_server

    settings = get_settings()
    if not settings.uses_embedded_db:
        print("DATABASE_URL is set: nothing embedded to stop")
        return 0
    stop_embedded_server(settings.embedded_db_dir)
    print(f"stopped the embedded PostgreSQL in {settings.embedded_db_dir.resolve()}")
    return 0
