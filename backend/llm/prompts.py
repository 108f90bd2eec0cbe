"""Prompts are data files (backend/llm/prompts/*.md) with {named} variables, loaded once."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

from backend.llm.base import SourceText, Turn

# Only {lower_snake} placeholders are variables, so other braces (JSON examples) stay literal.
_VARIABLE = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class PromptError(ValueError):
    """A prompt file is missing, or was rendered with missing or unknown variables."""


@dataclass(frozen=True)
class Prompt:
    """A prompt template and the variables it declares, in order of first use."""

    name: str
    text: str

    @cached_property
    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_VARIABLE.findall(self.text)))

    def render(self, **values: object) -> str:
        """The template with every {variable} replaced; missing or unknown variables raise PromptError."""
        declared = set(self.variables)
        missing = sorted(declared - values.keys())
        unknown = sorted(values.keys() - declared)
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"unknown {', '.join(unknown)}"] if unknown else []
        if problems:
            takes = ", ".join(self.variables) or "none"
            raise PromptError(f"prompt {self.name!r} takes variables ({takes}): {'; '.join(problems)}")
        # One pass: a value that itself contains {braces} is not substituted again.
        return _VARIABLE.sub(lambda m: str(values[m.group(1)]), self.text)


@cache
def load_prompt(name: str) -> Prompt:
    """The prompt backend/llm/prompts/{name}.md, read once."""
    if not _NAME.fullmatch(name):
        raise PromptError(f"invalid prompt name {name!r}")
    path = resources.files("backend.llm").joinpath("prompts").joinpath(f"{name}.md")
    if not path.is_file():
        raise PromptError(f"no prompt file prompts/{name}.md")
    return Prompt(name=name, text=path.read_text(encoding="utf-8").strip())


def format_sources(sources: Sequence[SourceText]) -> str:
    """The numbered sources block: "[n] title > heading" then the content, blank line between."""
    blocks = []
    for source in sources:
        label = " > ".join(part for part in (source.title.strip(), source.heading.strip()) if part)
        blocks.append(f"[{source.n}] {label}\n{source.content.strip()}")
    return "\n\n".join(blocks)


def format_history(history: Sequence[Turn], max_chars_per_turn: int = 500) -> str:
    """Earlier turns as "User: ..." / "Assistant: ..." lines, long turns cut short."""
    lines = []
    for turn in history:
        speaker = "User" if turn.role == "user" else "Assistant"
        text = " ".join(turn.content.split())
        if len(text) > max_chars_per_turn:
            text = text[:max_chars_per_turn] + "…"
        lines.append(f"{speaker}: {text}")
    return "\n".join(lines)
