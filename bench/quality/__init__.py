"""Retrieval quality on the shared BEIR sets (`python -m bench.quality`)."""
