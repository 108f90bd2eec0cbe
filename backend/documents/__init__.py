"""Documents: ingestion (load, chunk, embed, store), bulk loads, re-embedding, and reading and deleting
them as the caller."""
