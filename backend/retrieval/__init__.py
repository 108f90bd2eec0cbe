"""Retrieval building blocks: filters, the heuristic reranker and the dynamic top-k cut."""
