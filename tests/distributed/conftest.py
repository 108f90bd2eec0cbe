"""pgrag on a real Citus cluster: the tests of this folder (`make test-distributed`).

`python -m backend cluster test` starts a throw-away coordinator + workers from the Citus build and
sets PGRAG_TEST_CLUSTER to its folder. Without it (the normal suite, CI: no Citus build there) every
test here is reported as skipped, with the reason. Each session creates a scratch database on the
cluster, migrates it with the ordinary migrations and distributes it (db distribute), so the shared
fixtures of tests/conftest.py (db, services, client) run against the coordinator.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.cluster.nodes import Cluster, load_cluster
from backend.db import migrations
from backend.db.distribute import distribute
from tests.test_isolation_api import users  # noqa: F401  (a fixture the re-collected tests use)

CLUSTER_DIR = os.environ.get("PGRAG_TEST_CLUSTER", "").strip()
HERE = Path(__file__).resolve().parent
SHARDS = 8  # per table: enough that tenants land on both workers, few enough to keep fan-out cheap


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CLUSTER_DIR:
        return
    skip = pytest.mark.skip(
        reason="distributed: no Citus cluster (make test-distributed, with CITUS_SRC set)"
    )
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    found = load_cluster(Path(CLUSTER_DIR)) if CLUSTER_DIR else None
    if found is None:
        pytest.skip(f"no Citus cluster recorded in {CLUSTER_DIR!r}")
    return found


@pytest.fixture(scope="session")
def database_url(cluster: Cluster) -> Iterator[str]:
    """A scratch database on the cluster: migrated like any database, then distributed."""
    name = f"pgrag_test_{uuid.uuid4().hex[:12]}"
    url = cluster.create_database(name)
    try:
        migrations.upgrade(url)
        distribute(url, shard_count=SHARDS)
        yield url
    finally:
        cluster.drop_database(name)
