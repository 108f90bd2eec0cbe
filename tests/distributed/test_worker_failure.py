"""A worker that stops in the middle of a load: the load stops with an error that names the node, what
was committed stays, nothing half-written shows, the API answers 503 while the node is away -- and
once it is back the same load completes and the statistics are exact."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import psycopg
import pytest

from backend.cluster.nodes import Cluster, Node
from backend.testing import HashingEmbedder
from tests.distributed.test_term_statistics import assert_exact
from tests.factories import loaded_document

PUBLIC_TENANT = uuid.UUID(int=0)
DOCUMENTS = [
    loaded_document(f"doc-{i}", f"第{i}份文件：袋鼠在澳洲的第{i}个栖息地，靠近第{i}条河。") for i in range(12)
]


class StopsANode:
    """Embeds like HashingEmbedder; on its `on_call`-th batch it stops a node first (a crash:
    immediate shutdown), between the group's read and its write transaction."""

    def __init__(self, cluster: Cluster, node: Node, on_call: int) -> None:
        self.inner = HashingEmbedder()
        self.model_id = self.inner.model_id
        self.dims = self.inner.dims
        self.cluster, self.node, self.on_call, self.calls = cluster, node, on_call, 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.on_call:
            self.cluster.stop_node(self.node, mode="immediate")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def public_worker(cluster: Cluster, db: psycopg.Connection) -> Node:
    row = db.execute(
        "select nodeport from citus_shards where table_name = 'chunks'::regclass "
        "and shardid = get_shard_id_for_distribution_column('chunks', %s)",
        (PUBLIC_TENANT,),
    ).fetchone()
    assert row is not None
    return next(w for w in cluster.workers if w.port == row[0])


def test_a_worker_stopped_mid_load_is_a_clear_error_and_the_load_completes_when_it_is_back(
    cluster, make_services, client, db
):
    worker = public_worker(cluster, db)
    crashing = make_services(embedder=StopsANode(cluster, worker, on_call=2), ingest_embed_batch_size=4)
    try:
        with pytest.raises(psycopg.OperationalError, match=f"127.0.0.1:{worker.port}"):
            crashing.ingestion.ingest(DOCUMENTS, identity=None)

        # While it is away: a clear 503, not a 500 and not a partial answer.
        for response in (client.post("/search", json={"query": "袋鼠在哪里"}), client.get("/documents")):
            assert response.status_code == 503, response.text
            assert response.json()["error"] == "DatabaseUnavailable"
    finally:
        if not cluster.running(worker):
            cluster.start_node(worker)

    # Back: the first group was committed before the crash and stayed whole; the rest was not written.
    stored = {
        r[0]: r[1]
        for r in db.execute(
            "select d.external_id, count(*) from documents d "
            "where d.id in (select document_id from chunks) group by 1"
        )
    }
    assert set(stored) < {d.external_id for d in DOCUMENTS}
    assert db.execute("select count(*) from documents").fetchone()[0] == len(stored)
    assert_exact(db)

    again = make_services().ingestion.ingest(DOCUMENTS, identity=None)
    assert again.counts == {
        "created": len(DOCUMENTS) - len(stored),
        "updated": 0,
        "unchanged": len(stored),
        "failed": 0,
    }
    assert db.execute("select count(*) from documents").fetchone()[0] == len(DOCUMENTS)
    assert_exact(db)
    response = client.post("/search", json={"query": "第3份文件的栖息地", "dynamic": False})
    assert response.status_code == 200
    assert response.json()["results"][0]["external_id"] == "doc-3"
