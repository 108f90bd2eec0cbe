"""`db upgrade | status | ship-sql | new-migration | lock | stop | distribute`: database lifecycle."""

from __future__ import annotations

import argparse
from pathlib import Path

from backend import PROJECT_ROOT
from backend.config import Settings, get_settings
from backend.db import migrations
from backend.db.connection import redact, resolve_database_url


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="database: migrate, inspect, ship SQL changes")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_sub.add_parser(
        "upgrade", help="apply pending migrations (starts the embedded server if needed)"
    ).set_defaults(handler=upgrade)
    db_sub.add_parser("status", help="where the database is and which migration it is at").set_defaults(
        handler=status
    )
    ship = db_sub.add_parser(
        "ship-sql",
        help="write (and record) a new migration with the sql/ functions that changed; exit 1 when none did",
    )
    ship.add_argument("name", help="migration name, e.g. tune_rrf_k")
    ship.set_defaults(handler=ship_sql)
    new = db_sub.add_parser(
        "new-migration", help="start a hand-written migration (schema changes); record it with db lock"
    )
    new.add_argument("name", help="migration name, e.g. add_chunk_language")
    new.set_defaults(handler=new_migration)
    db_sub.add_parser(
        "lock", help="record new migrations in supabase/migrations.lock; exit 2 if a shipped one changed"
    ).set_defaults(handler=lock)
    db_sub.add_parser("stop", help="stop the embedded server").set_defaults(handler=stop)
    from backend.cli.cluster_commands import register_distribute

    register_distribute(db_sub)


def _describe(settings: Settings) -> str:
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
    from backend.cli.cluster_commands import redistribute_after_upgrade

    redistribute_after_upgrade(url)
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
    from backend.cli.errors import CliError
    from backend.db.migration_lock import MigrationLockError, require_intact
    from backend.db.ship_sql import ShipSqlError, ship_sql

    try:
        # A broken lock or a bad name is refused before any database is started or reached.
        require_intact(migrations.REPOSITORY)
        migrations.next_migration_file(args.name, migrations.REPOSITORY)
        path = ship_sql(args.name, resolve_database_url(get_settings()), migrations.REPOSITORY)
    except (ValueError, MigrationLockError, ShipSqlError) as exc:
        raise CliError(str(exc)) from exc
    if path is None:
        print("sql/ installs exactly what the migrations install: nothing to ship, nothing written")
        return 1
    print(f"wrote {_relative(path)} (only the changed functions), its Alembic revision, and its checksum")
    print("apply with: python -m backend db upgrade; commit the three files")
    return 0


def new_migration(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.db.migration_lock import MigrationLockError, require_intact

    try:
        require_intact(migrations.REPOSITORY)
        target = migrations.next_migration_file(args.name, migrations.REPOSITORY)
    except (ValueError, MigrationLockError) as exc:
        raise CliError(str(exc)) from exc
    header = f"-- {target.name}: what this migration changes, and why.\n"
    migrations.write_migration(target, header, migrations.REPOSITORY)
    print(f"wrote {_relative(target)} and its Alembic revision; write the SQL, then record it with:")
    print("  python -m backend db lock   (the tests fail while a migration is not recorded)")
    return 0


def lock(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.db.migration_lock import MigrationLockError, record_unrecorded

    try:
        added = record_unrecorded(migrations.REPOSITORY)
    except MigrationLockError as exc:
        raise CliError(str(exc)) from exc
    for name in added:
        print(f"recorded {name}")
    if not added:
        print("every migration is already recorded; nothing to do")
    return 0


def _relative(path: Path) -> Path:
    return path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path


def stop(args: argparse.Namespace) -> int:
    from backend.db.embedded import stop_embedded_server

    settings = get_settings()
    if not settings.uses_embedded_db:
        print("DATABASE_URL is set: nothing embedded to stop")
        return 0
    stop_embedded_server(settings.embedded_db_dir)
    print(f"stopped the embedded PostgreSQL in {settings.embedded_db_dir.resolve()}")
    return 0
