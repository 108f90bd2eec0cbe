"""The one place that picks the LLM provider from settings."""

from __future__ import annotations

from backend.config import Settings
from backend.llm.base import LLM
from backend.llm.extractive import ExtractiveLLM
from backend.llm.gemini import GeminiLLM


def create_llm(settings: Settings) -> LLM:
    """Gemini when configured (or an API key is set), the extractive fallback otherwise."""
    if settings.resolved_llm_provider == "gemini":
        return GeminiLLM(settings)
    return ExtractiveLLM()
