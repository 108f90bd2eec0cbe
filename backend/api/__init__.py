"""HTTP API (FastAPI): thin routes over the services."""
