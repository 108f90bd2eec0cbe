"""Text that cannot be stored: NUL characters and unpaired surrogates, found anywhere in a JSON value.

PostgreSQL text and jsonb cannot hold U+0000, and a lone surrogate (U+D800..U+DFFF without its pair,
which a JSON `\\ud800` escape or a non-UTF-8 file name can produce) is not a character at all: UTF-8
cannot encode it, so it fails wherever the text is written, logged or sent back. The API refuses
both at the edge (backend/api/text_hygiene.py), the loaders refuse or drop them (backend/ingest/);
`printable` makes any text safe to put in an error message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# In a Python str a surrogate code point is always unpaired: a well-formed pair decodes to one
# astral character (json.loads joins "\ud83d\ude00" into a single emoji).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
Location = tuple[str | int, ...]


@dataclass(frozen=True)
class UnstorableText:
    """Where the first unstorable character is (a path into the value) and what it is."""

    location: Location
    character: str
    in_key: bool  # the location names a key that itself holds the character

    @property
    def message(self) -> str:
        where = "this key contains" if self.in_key else "contains"
        code = f"U+{ord(self.character):04X}"
        if self.character == "\x00":
            return f"{where} a NUL character ({code}), which text cannot hold; remove it"
        return (
            f"{where} an unpaired surrogate ({code}), which is not a character; "
            "send text as valid UTF-8 (or UTF-16 pairs in JSON \\u escapes)"
        )


def unstorable_char(text: str) -> str | None:
    """The first NUL or unpaired surrogate in text, or None."""
    match = _UNSTORABLE.search(text)
    return match.group() if match else None


def find_unstorable(value: Any, location: Location = ()) -> UnstorableText | None:
    """The first unstorable character in a JSON-like value (strings, dict keys and values, lists)."""
    for path, text, in_key in _strings(value, location):
        char = unstorable_char(text)
        if char is not None:
            return UnstorableText(path, char, in_key)
    return None


def _strings(value: Any, location: Location) -> Iterator[tuple[Location, str, bool]]:
    """Every string in value with its path; iterative, so no nesting depth can exhaust the stack."""
    stack: list[tuple[Location, Any]] = [(location, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            yield path, item, False
        elif isinstance(item, dict):
            entries = list(item.items())
            for key, _ in entries:
                if isinstance(key, str):
                    yield (*path, key), key, True
            stack.extend(((*path, key), child) for key, child in reversed(entries))
        elif isinstance(item, list | tuple):
            stack.extend(((*path, i), child) for i, child in reversed(list(enumerate(item))))


def drop_unstorable(text: str) -> str:
    """text without NUL characters and unpaired surrogates (for text we extract, not text we are sent)."""
    return _UNSTORABLE.sub("", text)


def scrub(value: Any) -> Any:
    """A JSON-like value with drop_unstorable applied to every string and key (for what a model wrote)."""
    if isinstance(value, str):
        return drop_unstorable(value)
    if isinstance(value, dict):
        return {scrub(key): scrub(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(child) for child in value]
    return value


def printable(text: str) -> str:
    """text with NUL and unpaired surrogates written as \\u escapes: safe to log, encode and send back."""
    return _UNSTORABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def location_text(location: tuple[object, ...], *, root: str = "") -> str:
    """A path into a JSON value for a person: filters.tags.$in[3]; a key that is not a plain name is
    quoted and escaped (metadata["a\\u0000b"]); `root` names an empty path or one opening with a quote."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(str(part)):
            out += f".{part}" if out else str(part)
        else:
            quoted = printable(str(part).replace("\\", "\\\\").replace('"', '\\"'))
            out = f'{out or root}["{quoted}"]'
    return out or root
