"""The LLM layer: one Protocol, a provider per vendor, prompts kept as files."""

from backend.llm.base import LLM, SourceText, Turn
from backend.llm.extractive import ExtractiveLLM
from backend.llm.factory import create_llm
from backend.llm.gemini import GeminiLLM
from backend.llm.prompts import Prompt, PromptError, format_history, format_sources, load_prompt
from backend.llm.scripted import AnswerCall, CompleteCall, ScriptedLLM

__all__ = [
    "LLM",
    "AnswerCall",
    "CompleteCall",
    "ExtractiveLLM",
    "GeminiLLM",
    "Prompt",
    "PromptError",
    "ScriptedLLM",
    "SourceText",
    "Turn",
    "create_llm",
    "format_history",
    "format_sources",
    "load_prompt",
]
