"""The one place that picks the embedding provider from settings."""

from __future__ import annotations

from backend.config import Settings
from backend.embeddings.base import Embedder
from backend.embeddings.gemini import GeminiEmbedder
from backend.embeddings.local import LocalEmbedder
from backend.embeddings.openai_compatible import OpenAICompatibleEmbedder


def create_embedder(settings: Settings) -> Embedder:
    """Gemini when EMBEDDING_PROVIDER says so or an API key is set, a server speaking OpenAI's embeddings
    API when EMBEDDING_PROVIDER=openai_compatible, else the bundled local model."""
    provider = settings.resolved_embedding_provider
    if provider == "gemini":
        return GeminiEmbedder(settings)
    if provider == "openai_compatible":
        return OpenAICompatibleEmbedder(settings)
    if provider == "local":
        return LocalEmbedder(settings)
    raise ValueError(
        f"Unknown embedding provider {provider!r}; use 'gemini', 'openai_compatible' or 'local'."
    )
