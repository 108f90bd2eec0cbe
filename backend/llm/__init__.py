"""The LLM layer: one Protocol, a provider per vendor, prompts kept as files."""

from backend.llm.base import LLM, SourceText, Turn
from backend.llm.extractive import ExtractiveLLM
from backend.llm.factory import create_llm
from backend.llm.gemini import GeminiLLM
from backend.llm.openai_compatible import OpenAICompatibleLLM
from backend.llm.prompts import (
    Prompt,
    PromptError,
    format_history,
    format_sources,
    load_prompt,
    load_prompt_for,
)

__all__ = [
    "LLM",
    "ExtractiveLLM",
    "GeminiLLM",
    "OpenAICompatibleLLM",
    "Prompt",
    "PromptError",
    "SourceText",
    "Turn",
    "create_llm",
    "format_history",
    "format_sources",
    "load_prompt",
    "load_prompt_for",
]
