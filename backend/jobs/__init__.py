"""Background ingestion jobs: submitted by the API, worked by threads of the API process or by
`python -m backend worker` processes, read (and cancelled) by their owner (migration 026)."""
