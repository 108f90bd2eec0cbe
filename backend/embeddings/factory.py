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


def configured_model_id(settings: Settings) -> str | None:
    """The model_id the configured provider embeds with, without asking any server; None when only the
    server knows it (OPENAI_EMBEDDING_DIMS unset)."""
    provider = settings.resolved_embedding_provider
    if provider == "gemini":
        return f"{settings.gemini_embedding_model}@{settings.gemini_embedding_dims}"
    if provider == "openai_compatible":
        dims = settings.openai_embedding_dims
        return f"{settings.openai_embedding_model.strip()}@{dims}" if dims else None
    return LocalEmbedder.model_id
