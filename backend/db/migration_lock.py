"""The checksum manifest of shipped migrations (supabase/migrations.lock).

A database that ran a migration never runs it again, so an edit to a shipped file reaches only
databases created after the edit (migration 010 went through this: see 011). The manifest holds one
`sha256  file name` line per migration, in the format of `sha256sum`, so it can also be checked
without Python: `cd supabase/migrations && sha256sum --check ../migrations.lock`.

Entries are only ever added. A new migration is recorded when it is final (db ship-sql does it for
the files it writes; `python -m backend db lock` for hand-written ones); recording refuses while a
recorded file has changed or disappeared.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from backend.db.migrations import REPOSITORY, MigrationPaths


class MigrationLockError(Exception):
    """A recorded migration changed or disappeared, or the manifest is malformed (the message says which)."""


@dataclass(frozen=True)
class LockStatus:
    changed: list[str]  # recorded, but the file's checksum differs
    missing: list[str]  # recorded, but the file is gone
    unrecorded: list[str]  # in supabase/migrations, not yet in the manifest

    @property
    def intact(self) -> bool:
        """No shipped file changed or disappeared (unrecorded new files are allowed)."""
        return not self.changed and not self.missing


def file_checksum(path: Path) -> str:
    """sha256 of the file's bytes (what sha256sum prints)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_lock(lock_file: Path) -> dict[str, str]:
    """File name -> recorded checksum."""
    if not lock_file.exists():
        return {}
    entries: dict[str, str] = {}
    for number, line in enumerate(lock_file.read_text(encoding="utf-8").splitlines(), start=1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise MigrationLockError(f"{lock_file}:{number}: not a `sha256  file name` line: {line!r}")
        entries[name] = digest
    return entries


def _migration_folder_files(migrations_dir: Path) -> list[Path]:
    # Every file, not only NNN_name.sql: `supabase db push` would run a stray one too.
    return sorted(p for p in migrations_dir.iterdir() if p.is_file())


def lock_status(paths: MigrationPaths = REPOSITORY) -> LockStatus:
    """Compare the migration folder with the manifest."""
    recorded = read_lock(paths.lock_file)
    on_disk = {p.name: p for p in _migration_folder_files(paths.migrations_dir)}
    return LockStatus(
        changed=[n for n, digest in recorded.items() if n in on_disk and file_checksum(on_disk[n]) != digest],
        missing=[n for n in recorded if n not in on_disk],
        unrecorded=[n for n in on_disk if n not in recorded],
    )


def describe_damage(status: LockStatus) -> str:
    """What is wrong with the shipped migrations and how to fix it."""
    problems = [f"{name} changed after it shipped" for name in status.changed]
    problems += [f"{name} was removed after it shipped" for name in status.missing]
    return (
        "; ".join(problems) + ". A database that already ran a migration never runs it again: restore "
        "the file (git checkout -- supabase/migrations/) and ship the change as a new migration "
        "(python -m backend db ship-sql NAME, or db new-migration NAME)"
    )


def require_intact(paths: MigrationPaths = REPOSITORY) -> LockStatus:
    """The lock status, or MigrationLockError when a recorded file changed or disappeared."""
    status = lock_status(paths)
    if not status.intact:
        raise MigrationLockError(describe_damage(status))
    return status


def record(names: list[str], paths: MigrationPaths = REPOSITORY) -> list[str]:
    """Add these migration files to the manifest; refuses while any recorded file changed."""
    status = require_intact(paths)
    new = [name for name in names if name in status.unrecorded]
    if new:
        entries = read_lock(paths.lock_file)
        entries.update({name: file_checksum(paths.migrations_dir / name) for name in new})
        lines = [f"{digest}  {name}\n" for name, digest in sorted(entries.items())]
        paths.lock_file.write_text("".join(lines), encoding="utf-8")
    return new


def record_unrecorded(paths: MigrationPaths = REPOSITORY) -> list[str]:
    """`db lock`: record every migration file not yet in the manifest."""
    return record(lock_status(paths).unrecorded, paths)
