"""The FastAPI app under uvicorn for the latency benchmark, with query embeddings precomputed.

Usage (bench/latency starts it): .venv/bin/python -m bench.latency.server --database-url URL
    --vectors FILE.npz --model-id ID --port N

Run as its own process so the benchmark's client threads do not share the server's GIL. The
embedder serves the query vectors in FILE.npz (keyed by the cleaned query text, which is what the
retrieval service asks for), so a request's latency excludes the embedding model; the metadata
whitelist gains the synthetic corpus's filter keys ("bucket", "sel", "readers"). The benchmark's
requests carry the service key (BENCH_SERVICE_KEY): they read every chunk, as the owner-side SQL cells
do, although most of the synthetic corpus is private to its tenants.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import numpy as np
import uvicorn

from backend.api.app import create_app
from backend.config import DEFAULT_METADATA_WHITELIST, Settings
from backend.errors import InvalidInput
from bench.common import bench_settings
from bench.common.db import services
from bench.common.vectors import pack, unpack

BENCH_FILTER_KEYS = ("bucket", "sel", "readers")
BENCH_SERVICE_KEY = "bench-latency-service-key-0123456789abcdef"


class PrecomputedEmbedder:
    """An Embedder whose query vectors were computed beforehand; it embeds no passages."""

    def __init__(self, model_id: str, vectors: dict[str, np.ndarray]) -> None:
        self.model_id = model_id
        self.dims = len(next(iter(vectors.values())))
        self.vectors = vectors

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise InvalidInput("the latency benchmark's embedder embeds no documents")

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.vectors.get(text)
        if vector is None:
            raise InvalidInput(f"no precomputed vector for query {text[:80]!r}")
        return vector


def save_vectors(path: str, vectors: Mapping[str, np.ndarray]) -> None:
    keys, stacked = pack(vectors)
    np.savez(path, query_keys=keys, query_vectors=stacked)


def latency_settings() -> Settings:
    """The benchmark's settings (bench_settings) with the synthetic corpus's filter keys whitelisted."""
    return bench_settings(
        metadata_whitelist=[*DEFAULT_METADATA_WHITELIST, *BENCH_FILTER_KEYS],
        service_api_key=BENCH_SERVICE_KEY,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--model-id", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    with np.load(args.vectors) as data:
        embedder = PrecomputedEmbedder(args.model_id, unpack(data, "query"))
    with services(args.database_url, latency_settings(), embedder) as app_services:
        # Access logs off: one line per request to a pipe would be measured as server time.
        app = create_app(services=app_services)
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
