"""Ingestion throughput (`python -m bench.ingest`)."""
