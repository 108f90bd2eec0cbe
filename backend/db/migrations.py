"""Schema migrations: the SQL files in supabase/migrations, applied in order through Alembic.

supabase/migrations/NNN_name.sql is the one authority. Each file has a three-line Alembic revision in
backend/db/alembic/versions/ that executes that very file, so `alembic upgrade head`,
`python -m backend db upgrade` and `supabase db push` install the same objects. A file on main is never
edited again (supabase/migrations.lock records its checksum, see migration_lock.py): a change ships as
the next number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from backend import PROJECT_ROOT

if TYPE_CHECKING:
    from alembic.config import Config

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_NAME = re.compile(r"[a-z0-9_]+")

# Serialises concurrent migrators (two processes starting at once) on the same database.
ADVISORY_LOCK_KEY = 0x70677261  # "pgra"


@dataclass(frozen=True)
class MigrationPaths:
    """Where migrations, their revisions, their checksums and the tunable functions live.

    One object so the tests can point every command at a temporary copy of the repository.
    """

    migrations_dir: Path
    versions_dir: Path
    lock_file: Path
    sql_dir: Path


REPOSITORY = MigrationPaths(
    migrations_dir=PROJECT_ROOT / "supabase" / "migrations",
    versions_dir=ALEMBIC_DIR / "versions",
    # Outside supabase/migrations: the Supabase CLI treats every file in that folder as a migration.
    lock_file=PROJECT_ROOT / "supabase" / "migrations.lock",
    sql_dir=PROJECT_ROOT / "sql",
)
MIGRATIONS_DIR = REPOSITORY.migrations_dir
VERSIONS_DIR = REPOSITORY.versions_dir
SQL_DIR = REPOSITORY.sql_dir


def migration_files(migrations_dir: Path = MIGRATIONS_DIR) -> list[Path]:
    """The numbered SQL migrations, in order."""
    return sorted(p for p in migrations_dir.glob("*.sql") if _MIGRATION_NAME.match(p.name))


def migration_number(path: Path | str) -> str:
    """'011' for 011_name.sql."""
    match = _MIGRATION_NAME.match(Path(path).name)
    if match is None:
        raise ValueError(f"not a migration file name (NNN_name.sql): {Path(path).name}")
    return match.group(1)


def apply_sql_file(name: str) -> None:
    """Run one migration file inside Alembic's transaction (called from a revision module)."""
    from alembic import op

    sql = (MIGRATIONS_DIR / name).read_text(encoding="utf-8")
    # The raw psycopg connection: no parameter parsing, so '%' in function bodies stays literal.
    dbapi = op.get_bind().connection.dbapi_connection
    assert dbapi is not None
    dbapi.execute(sql)


def alembic_config(url: str) -> Config:
    """An Alembic Config pointing at our script folder and the given database."""
    from alembic.config import Config

    from backend.db.connection import sqlalchemy_url

    cfg = Config()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str) -> tuple[str | None, str | None]:
    """Apply pending migrations; return (revision before, revision after)."""
    from alembic import command

    before = current_revision(url)
    command.upgrade(alembic_config(url), "head")
    return before, current_revision(url)


def current_revision(url: str) -> str | None:
    """The applied revision, or None on an empty database."""
    import psycopg

    with psycopg.connect(url) as conn:
        exists = conn.execute("select to_regclass('public.alembic_version') is not null").fetchone()
        if not exists or not exists[0]:
            return None
        row = conn.execute("select version_num from public.alembic_version").fetchone()
        return row[0] if row else None


def head_revision() -> str:
    """The newest revision shipped with the code."""
    return migration_number(migration_files()[-1])


def next_migration_file(name: str, paths: MigrationPaths = REPOSITORY) -> Path:
    """supabase/migrations/NNN_name.sql for the next number (not written yet)."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"migration name must be lower-case letters, digits and _: {name!r}")
    files = migration_files(paths.migrations_dir)
    number = int(migration_number(files[-1])) + 1 if files else 1
    return paths.migrations_dir / f"{number:03d}_{name}.sql"


def write_migration(target: Path, sql: str, paths: MigrationPaths = REPOSITORY) -> Path:
    """Write a new migration file and its Alembic revision; never overwrites a migration."""
    with target.open("x", encoding="utf-8") as out:  # "x": an existing file is an error, not replaced
        out.write(sql)
    write_revision(target.name, paths.versions_dir)
    return target


def write_revision(file_name: str, versions_dir: Path = VERSIONS_DIR) -> Path:
    """The Alembic revision module that applies one migration file."""
    number = migration_number(file_name)
    previous = f"{int(number) - 1:03d}" if int(number) > 1 else None
    path = versions_dir / f"r{number}.py"
    path.write_text(
        f'"""Apply supabase/migrations/{file_name}."""\n\n'
        "from backend.db.migrations import apply_sql_file\n\n"
        f'revision = "{number}"\n'
        f"down_revision = {previous!r}\n".replace("'", '"')
        + "branch_labels = None\ndepends_on = None\n\n\n"
        "def upgrade() -> None:\n"
        f'    apply_sql_file("{file_name}")\n\n\n'
        "def downgrade() -> None:\n"
        '    raise NotImplementedError("migrations are forward-only; write a new one")\n',
        encoding="utf-8",
    )
    return path
