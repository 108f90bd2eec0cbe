"""A local pgbouncer in transaction pooling mode in front of the test server (pytest plugin).

What Supabase's transaction-mode pooler (port 6543) does to a client, on this machine: consecutive
transactions of one connection may run on different server connections, and session state (SET,
server-side prepared statements) does not follow the client. Debian's `pgbouncer` package is used;
when it is missing the fixture installs it with apt-get (we run as root) and fails with the reason
if that is impossible -- a skipped pooler test would hide exactly the breakage it exists to catch.

    def test_something(pgbouncer):
        url = pgbouncer.url(database_url)   # same database, through the pooler
        with psycopg.connect(url, prepare_threshold=None) as conn: ...
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import pytest

APT_TIMEOUT_S = 900
START_TIMEOUT_S = 15


def find_or_install_pgbouncer() -> str:
    """The pgbouncer executable; installed from Debian's package when absent."""
    found = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )
    if found:
        return found
    if os.geteuid() != 0:
        pytest.fail("pgbouncer is not installed; install it first: sudo apt-get install -y pgbouncer")
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [
        "apt-get",
        "-o",
        "DPkg::Lock::Timeout=300",
        "install",
        "-y",
        "--no-install-recommends",
        "pgbouncer",
    ]
    result = subprocess.run(install, env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S)
    if result.returncode != 0:  # stale or missing package lists: refresh once and retry
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S)
        result = subprocess.run(install, env=env, capture_output=True, text=True, timeout=APT_TIMEOUT_S)
    if result.returncode != 0 or not os.access("/usr/sbin/pgbouncer", os.X_OK):
        pytest.fail(
            "could not install pgbouncer with apt-get (is a Debian mirror reachable?):\n"
            + (result.stderr or result.stdout)[-2000:]
        )
    print(f"installed pgbouncer with apt-get in {time.monotonic() - started:.1f} s")
    return "/usr/sbin/pgbouncer"


@dataclass(frozen=True)
class Upstream:
    """Where pgbouncer reaches PostgreSQL: a unix socket directory or a TCP host, and a port."""

    host: str
    port: int
    user: str
    password: str

    @classmethod
    def from_url(cls, url: str) -> Upstream:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        host = query.get("host", [parts.hostname or "localhost"])[0]
        port = int(query.get("port", [parts.port or 5432])[0])
        return cls(host=host, port=port, user=parts.username or "postgres", password=parts.password or "")


@dataclass(frozen=True)
class PgBouncer:
    """A running pgbouncer; `url(database_url)` is the same database through it."""

    port: int
    pool_mode: str
    pool_size: int

    def url(self, database_url: str) -> str:
        parts = urlsplit(database_url)
        user = parts.username or "postgres"
        password = f":{parts.password}" if parts.password else ""
        return urlunsplit(("postgresql", f"{user}{password}@127.0.0.1:{self.port}", parts.path, "", ""))

    def admin(self, command: str) -> list[tuple]:
        """Run a command (SHOW POOLS, ...) on the admin console."""
        with psycopg.connect(
            self.url("postgresql:///pgbouncer"), autocommit=True, prepare_threshold=None
        ) as conn:
            with conn.cursor() as cur:
                cur.execute(command)
                return cur.fetchall() if cur.description else []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as(upstream: Upstream) -> str | None:
    """pgbouncer refuses to run as root: run it as whoever may open the server's socket."""
    if os.geteuid() != 0:
        return None
    if upstream.host.startswith("/"):
        return pwd.getpwuid(Path(upstream.host).stat().st_uid).pw_name
    return "nobody"


@contextmanager
def running_pgbouncer(
    server_url: str, *, pool_mode: str = "transaction", pool_size: int = 4
) -> Iterator[PgBouncer]:
    """Start pgbouncer in front of the server of `server_url` on a free port; stop it afterwards."""
    executable = find_or_install_pgbouncer()
    upstream = Upstream.from_url(server_url)
    user = _run_as(upstream)
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="pgbouncer-") as tmp:
        workdir = Path(tmp)
        (workdir / "userlist.txt").write_text(f'"{upstream.user}" "{upstream.password}"\n', encoding="utf-8")
        (workdir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={upstream.host} port={upstream.port}\n\n"  # logs in with auth_file's password
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {workdir / 'userlist.txt'}\n"
            f"admin_users = {upstream.user}\n"
            f"pool_mode = {pool_mode}\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 200\n"
            # libpq `options` (the pool's statement_timeout) cannot pass a pooler; drop it, not the client.
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {workdir / 'pgbouncer.log'}\n"
            f"pidfile = {workdir / 'pgbouncer.pid'}\n",
            encoding="utf-8",
        )
        if user:
            uid = pwd.getpwnam(user).pw_uid
            for path in (workdir, *workdir.iterdir()):
                os.chown(path, uid, -1)
        command = [executable, *(["-u", user] if user else []), str(workdir / "pgbouncer.ini")]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bouncer = PgBouncer(port=port, pool_mode=pool_mode, pool_size=pool_size)
        try:
            _wait_until_listening(proc, port, workdir / "pgbouncer.log")
            yield bouncer
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_until_listening(proc: subprocess.Popen[str], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            text = log.read_text(encoding="utf-8") if log.exists() else ""
            pytest.fail(f"pgbouncer exited with {proc.returncode}:\n{output}\n{text}"[-3000:])
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"pgbouncer did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S} s")


@pytest.fixture(scope="session")
def pgbouncer(server_url: str) -> Iterator[PgBouncer]:
    """pgbouncer in transaction pooling mode in front of the session's test server."""
    with running_pgbouncer(server_url) as bouncer:
        yield bouncer
