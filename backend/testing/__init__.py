"""Test doubles and local stand-ins for external services, in one clearly named place: never chosen by
the provider factories, never touching the internet.

HashingEmbedder (deterministic bag-of-tokens vectors), FailingEmbedder (fails on a chosen call) and
ScriptedLLM (canned answers and completions, every call recorded) are injected through the same
constructor seams the real providers use; fake_web is a local Tavily/SearXNG server for tests and the
demo (`python -m backend.testing.fake_web`).
"""

from backend.testing.embeddings import FailingEmbedder, HashingEmbedder
from backend.testing.llm import AnswerCall, CompleteCall, JsonCall, ScriptedLLM

__all__ = ["AnswerCall", "CompleteCall", "FailingEmbedder", "HashingEmbedder", "JsonCall", "ScriptedLLM"]
