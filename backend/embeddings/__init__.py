"""Embedding providers behind one Protocol; create_embedder() picks one from settings."""

from backend.embeddings.base import Embedder
from backend.embeddings.factory import create_embedder
from backend.embeddings.gemini import GeminiEmbedder
from backend.embeddings.local import LocalEmbedder
from backend.embeddings.openai_compatible import OpenAICompatibleEmbedder

__all__ = [
    "Embedder",
    "GeminiEmbedder",
    "LocalEmbedder",
    "OpenAICompatibleEmbedder",
    "create_embedder",
]
