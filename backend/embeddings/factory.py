"""The one place that picks the embedding provider from settings."""

from __future__ import annotations

from backend.config import Settings
from backend.embeddings.base import Embedder
from backend.embeddings.gemini import GeminiEmbedder
from backend.embeddings.local import LocalEmbedder


def create_embedder(settings: Settings) -> Embedder:
    """Gemini when EMBEDDING_PROVIDER says so or an API key is set, else the bundled local model."""
    provider = settings.resolved_embedding_provider
    if provider == "gemini":
        return GeminiEmbedder(settings)
    if provider == "local":
        return LocalEmbedder(settings)
    raise ValueError(f"Unknown embedding provider {provider!r}; use 'gemini' or 'local'.")
