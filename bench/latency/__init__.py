"""Latency and throughput of retrieval at scale (`python -m bench.latency`)."""
