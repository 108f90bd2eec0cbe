"""The one place that picks the LLM provider from settings."""

from __future__ import annotations

from backend.config import Settings
from backend.llm.base import LLM
from backend.llm.extractive import ExtractiveLLM
from backend.llm.gemini import GeminiLLM
from backend.llm.openai_compatible import OpenAICompatibleLLM


def create_llm(settings: Settings) -> LLM:
    """Gemini when configured (or an API key is set), an OpenAI-compatible server when LLM_PROVIDER says
    so, the extractive fallback otherwise."""
    provider = settings.resolved_llm_provider
    if provider == "gemini":
        return GeminiLLM(settings)
    if provider == "openai_compatible":
        return OpenAICompatibleLLM(settings)
    return ExtractiveLLM()
