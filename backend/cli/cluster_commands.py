"""`cluster build | up | down | status | destroy | test` (a local Citus cluster) and `db distribute`.

The cluster is for development and the distributed tests: one coordinator and CLUSTER_WORKERS workers
from the embedded PostgreSQL with Citus built from CITUS_SRC (docs/scaling.md, "Running it").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from backend import PROJECT_ROOT
from backend.config import Settings, get_settings

if TYPE_CHECKING:
    from backend.cluster.build import CitusBuild
    from backend.cluster.nodes import Cluster

SKIPPED = (
    "distributed tests: skipped (no Citus build: set CITUS_SRC to a Citus source folder, see docs/scaling.md)"
)
TEST_CLUSTER = "cluster-test"  # `cluster test` runs its own cluster beside a developer's, on other ports
TEST_PORT_OFFSET = 10


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "cluster", help="a local Citus cluster: build Citus, start/stop nodes, distributed tests"
    )
    c_sub = c.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    c_sub.add_parser(
        "build", help="build Citus from CITUS_SRC against the embedded PostgreSQL (cached)"
    ).set_defaults(handler=build)
    up_parser = c_sub.add_parser(
        "up", help="start the coordinator and workers, migrate and distribute the pgrag database"
    )
    up_parser.add_argument("--fast", action="store_true", help="fsync off (tests, throw-away data)")
    up_parser.add_argument("--shared-buffers", default="256MB", help="per node (default 256MB)")
    up_parser.add_argument(
        "--maintenance-work-mem", default="256MB", help="per node: HNSW builds on the shards (default 256MB)"
    )
    up_parser.add_argument(
        "--shard-count",
        type=int,
        default=8,
        help="shards per table (default 8: two workers sharing a machine)",
    )
    up_parser.set_defaults(handler=up)
    c_sub.add_parser("down", help="stop every node (the data stays)").set_defaults(handler=down)
    c_sub.add_parser("status", help="nodes, ports, and whether the coordinator lists them").set_defaults(
        handler=status
    )
    c_sub.add_parser("destroy", help="stop the nodes and delete the cluster's data").set_defaults(
        handler=destroy
    )
    t = c_sub.add_parser(
        "test",
        help="the distributed tests on a throw-away cluster (exit 0 with 'skipped' without a Citus build)",
    )
    t.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed to pytest (e.g. -k parity)")
    t.set_defaults(handler=test)


def register_distribute(db_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`db distribute`, beside the other `db` actions."""
    d = db_sub.add_parser(
        "distribute",
        help="Citus only: distribute the migrated tables by tenant and install sql/citus/ (after db upgrade)",
    )
    d.add_argument("--shard-count", type=int, default=None, help="shards per table (Citus default: 32)")
    d.set_defaults(handler=distribute_command)


# --- handlers ----------------------------------------------------------------------------------------


def build(args: argparse.Namespace) -> int:
    settings = get_settings()
    if settings.citus_src is None:
        raise _cli_error(
            "CITUS_SRC is not set: point it at a Citus source folder (a clone of citusdata/citus)"
        )
    found = _build(settings)
    print(f"citus build: {found.root}")
    return 0


def up(args: argparse.Namespace) -> int:
    settings = get_settings()
    cluster = _cluster(settings, settings.cluster_dir, settings.cluster_port)
    url = _up(
        cluster,
        fast=args.fast,
        shared_buffers=args.shared_buffers,
        maintenance_work_mem=args.maintenance_work_mem,
        shard_count=args.shard_count,
    )
    print(f"DATABASE_URL={url}")
    return 0


def down(args: argparse.Namespace) -> int:
    from backend.cluster.nodes import load_cluster

    cluster = load_cluster(get_settings().cluster_dir)
    if cluster is None:
        print("no cluster here: nothing to stop")
        return 0
    cluster.down()
    return 0


def status(args: argparse.Namespace) -> int:
    from backend.cluster.nodes import load_cluster

    settings = get_settings()
    cluster = load_cluster(settings.cluster_dir)
    if cluster is None:
        print(f"no cluster in {settings.cluster_dir.resolve()} (python -m backend cluster up)")
        return 1
    print(f"citus build: {cluster.build.key}; coordinator: {cluster.url()}")
    rows = cluster.status()
    listed = {None: "", True: ", active in pg_dist_node", False: ", inactive in pg_dist_node"}
    for row in rows:
        state = "running" if row["running"] else "stopped"
        print(f"  {row['node']:12s} 127.0.0.1:{row['port']}  {state}{listed[row['in_metadata']]}")  # type: ignore[index]
    return 0 if all(r["running"] for r in rows) else 1


def destroy(args: argparse.Namespace) -> int:
    from backend.cluster.nodes import load_cluster

    settings = get_settings()
    cluster = load_cluster(settings.cluster_dir)
    if cluster is not None:
        cluster.down()
    shutil.rmtree(settings.cluster_dir, ignore_errors=True)
    print(f"removed {settings.cluster_dir.resolve()}")
    return 0


def test(args: argparse.Namespace) -> int:
    """Build (or reuse) Citus, start a throw-away cluster, run tests/distributed, stop it."""
    from backend.cluster.build import find_build

    settings = get_settings()
    if settings.citus_src is None and find_build(settings.citus_build_dir, None) is None:
        print(SKIPPED)
        return 0
    root = settings.cluster_dir.parent / TEST_CLUSTER
    cluster = _cluster(settings, root, settings.cluster_port + TEST_PORT_OFFSET)
    print(f"starting a test cluster in {root} (Citus {cluster.build.key})", flush=True)
    cluster.up(fast=True, shared_buffers="128MB")
    try:
        env = {**os.environ, "PGRAG_TEST_CLUSTER": str(cluster.root)}
        pytest_args = [a for a in args.pytest_args if a != "--"]
        command = [sys.executable, "-m", "pytest", "-q", "tests/distributed", *pytest_args]
        return subprocess.run(command, cwd=PROJECT_ROOT, env=env, check=False).returncode
    finally:
        cluster.down()


def distribute_command(args: argparse.Namespace) -> int:
    from backend.db.connection import redact, resolve_database_url
    from backend.db.distribute import DistributeError, distribute

    url = resolve_database_url(get_settings())
    try:
        report = distribute(url, shard_count=args.shard_count, log=print)
    except DistributeError as exc:
        raise _cli_error(str(exc)) from exc
    print(f"database: {redact(url)}: {report.workers} workers, {report.shard_count} shards per table")
    for table, column, group in report.tables:
        print(f"  {table:18s} by {column:13s} co-location group {group}")
    return 0


def redistribute_after_upgrade(url: str) -> None:
    """On a distributed database, db upgrade re-applies sql/citus/: a migration that re-creates a
    function installs its single-node body, which would query other shards."""
    import psycopg

    from backend.db.distribute import distribute, is_distributed

    with psycopg.connect(url) as conn:
        distributed = is_distributed(conn)
    if distributed:
        print("citus: the database is distributed; re-applying sql/citus/ (db distribute)")
        distribute(url, log=lambda _m: None)


# --- helpers -----------------------------------------------------------------------------------------


def _build(settings: Settings) -> CitusBuild:
    from backend.cluster.build import CitusBuildError, build, find_build

    try:
        if settings.citus_src is not None:
            return build(settings.citus_src, settings.citus_build_dir, log=print)
        found = find_build(settings.citus_build_dir, None)
    except CitusBuildError as exc:
        raise _cli_error(str(exc)) from exc
    if found is None:
        raise _cli_error(
            "no Citus build: set CITUS_SRC to a Citus source folder (a clone of citusdata/citus)"
        )
    return found


def _cluster(settings: Settings, root: Path, port: int) -> Cluster:
    from backend.cluster.nodes import Cluster, load_cluster

    existing = load_cluster(root)
    if existing is not None and settings.citus_src is None:
        return existing
    return Cluster(root, _build(settings), port=port, workers=settings.cluster_workers)


def _up(
    cluster: Cluster, *, fast: bool, shared_buffers: str, maintenance_work_mem: str, shard_count: int | None
) -> str:
    from backend.cluster.nodes import ClusterError
    from backend.db import migrations
    from backend.db.distribute import DistributeError, distribute

    try:
        cluster.up(fast=fast, shared_buffers=shared_buffers, maintenance_work_mem=maintenance_work_mem)
        url: str = cluster.url()
        before, after = migrations.upgrade(url)
        print(f"schema: {before or 'empty database'} -> {after}")
        distribute(url, shard_count=shard_count, log=print)
    except (ClusterError, DistributeError) as exc:
        raise _cli_error(str(exc)) from exc
    return url


def _cli_error(message: str) -> Exception:
    from backend.cli.errors import CliError

    return CliError(message)
