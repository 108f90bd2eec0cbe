"""Prompts are data files (backend/llm/prompts/*.md) with {named} variables, loaded once.

Untrusted material - document excerpts, web pages, the conversation they shaped, values taken from
documents - enters a prompt only inside a tagged block (`<source n="3">...</source>`, `<evidence>`,
`<conversation>`, `<document_values>`), and every prompt that holds one says that a block is data,
never instructions. Inside the material, anything that could be read as one of these tags (`</source>`,
`< SOURCE`, a full-width `＜/source`) is neutralised, so no source can close its block early, open a
fake one, and speak as the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

from backend.llm.base import SourceText, Turn
from backend.text import detect_lang

UNTRUSTED_TAGS = ("source", "evidence", "conversation", "document_values")
# "<" (or a look-alike) opening or closing one of the tags (or a plural), in any case and spacing.
_DELIMITER = re.compile(
    r"[<\uff1c\ufe64](?=\s*/?\s*(?:" + "|".join(UNTRUSTED_TAGS) + r")s?(?![a-z0-9_]))", re.IGNORECASE
)
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


def load_prompt_for(name: str, text: str) -> Prompt:
    """The prompt `name` in the language of `text`: prompts/{name}_zh.md for Chinese, else {name}_en.md."""
    return load_prompt(f"{name}_{'zh' if detect_lang(text) == 'zh' else 'en'}")


def neutralise(material: str) -> str:
    """Untrusted text with every look-alike of a block delimiter disarmed ("</source>" -> "&lt;/source>")."""
    return _DELIMITER.sub("&lt;", material)


def untrusted_block(tag: str, material: str, *, n: int | None = None) -> str:
    """material inside <tag>...</tag> (numbered <source n="3">), its own delimiters neutralised."""
    if tag not in UNTRUSTED_TAGS:
        raise PromptError(f"unknown block tag {tag!r}")
    opening = f'<{tag} n="{n}">' if n is not None else f"<{tag}>"
    return f"{opening}\n{neutralise(material.strip())}\n</{tag}>"


def format_source(n: int, title: str, heading: str, content: str) -> str:
    """One numbered source block: the label line (title > heading), then the content."""
    label = " > ".join(part for part in (title.strip(), heading.strip()) if part)
    return untrusted_block("source", f"{label}\n{content.strip()}" if label else content, n=n)


def format_sources(sources: Sequence[SourceText]) -> str:
    """The sources of an answer: one <source n="..."> block each, a blank line between."""
    return "\n\n".join(format_source(s.n, s.title, s.heading, s.content) for s in sources)


def format_history(history: Sequence[Turn], max_chars_per_turn: int = 500) -> str:
    """Earlier turns as "User: ..." / "Assistant: ..." lines, long turns cut short (and neutralised:
    an answer can quote a source)."""
    lines = []
    for turn in history:
        speaker = "User" if turn.role == "user" else "Assistant"
        text = " ".join(turn.content.split())
        if len(text) > max_chars_per_turn:
            text = text[:max_chars_per_turn] + "…"
        lines.append(f"{speaker}: {neutralise(text)}")
    return "\n".join(lines)
