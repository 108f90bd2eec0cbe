"""Test doubles, in one clearly named place: never chosen by the provider factories.

HashingEmbedder (deterministic bag-of-tokens vectors), FailingEmbedder (fails on a chosen call) and
ScriptedLLM (canned answers and completions, every call recorded). Tests and benchmarks inject them
through the same constructor seams the real providers use.
"""

from backend.testing.embeddings import FailingEmbedder, HashingEmbedder
from backend.testing.llm import AnswerCall, CompleteCall, ScriptedLLM

__all__ = ["AnswerCall", "CompleteCall", "FailingEmbedder", "HashingEmbedder", "ScriptedLLM"]
