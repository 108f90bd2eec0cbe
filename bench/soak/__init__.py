"""The API server under mixed load: memory and connections over time (`python -m bench.soak`)."""
