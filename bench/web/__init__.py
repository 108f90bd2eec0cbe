"""The web leg's cost to /chat: soft-wait against a fast, a slow and a hanging provider (bench.web)."""
