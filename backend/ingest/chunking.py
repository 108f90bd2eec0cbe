"""Chunking: Markdown sections, Chinese/English sentences packed up to a size, a small sentence overlap.

Code fences stay whole. A chunk opening a section starts with its heading line ("## 安装"), which the
reranker rewards; later chunks of the section carry the heading only in heading_path.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown", "text/html"})  # HTML: loader emits '#'

_LINE = re.compile(r"[^\n]*\n|[^\n]+")
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\n?")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_CLOSERS = "\"'”’」』)）\\]"
# A sentence ends after 。！？；!?; (and closing quotes), after '.' before a space, or at a line break.
_SENTENCE_END = re.compile(rf"(?:[。！？；!?;…]+|\.(?=[\s{_CLOSERS}]))[{_CLOSERS}]*[ \t]*|\n\s*")
_SOFT_BREAK = re.compile(r"[，、,：:；;\s]")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its 0-based position, text, and the Markdown headings above it."""

    position: int
    content: str
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class _Unit:
    kind: str  # "heading" | "fence" | "sentence"
    text: str  # a slice of the input: the units of a document concatenate back to it
    path: tuple[str, ...]


def chunk_text(text: str, *, content_type: str, size: int = 500, overlap: int = 50) -> list[Chunk]:
    """Split text into chunks of at most size characters (a longer code fence stays whole)."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got size={size}, overlap={overlap}")
    if content_type.split(";")[0].strip().lower() in MARKDOWN_TYPES:
        units = _markdown_units(text)
    else:
        units = [_Unit("sentence", s, ()) for s in split_sentences(text)]
    chunks: list[Chunk] = []
    for group in _pack(units, size, overlap):
        content = _joined(group).strip()
        if content:
            chunks.append(Chunk(len(chunks), content, group[-1].path))
    return chunks


def split_sentences(text: str) -> list[str]:
    """Sentences with their trailing whitespace; they concatenate back to text."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.end()]
        if pieces and not piece.strip():
            pieces[-1] += piece
        else:
            pieces.append(piece)
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _markdown_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    stack: list[tuple[int, str]] = []  # (level, title) of the headings above
    prose: list[str] = []

    def flush_prose() -> None:
        path = tuple(title for _, title in stack)
        units.extend(_Unit("sentence", s, path) for s in split_sentences("".join(prose)))
        prose.clear()

    lines = _LINE.findall(text)
    i = 0
    while i < len(lines):
        fence, heading = _FENCE.match(lines[i]), _HEADING.fullmatch(lines[i])
        if fence:
            flush_prose()
            end = _fence_end(lines, i, fence.group(1))
            units.append(_Unit("fence", "".join(lines[i:end]), tuple(t for _, t in stack)))
            i = end
            continue
        if heading and heading.group(2).strip():
            flush_prose()
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading.group(2).strip()))
            units.append(_Unit("heading", lines[i], tuple(t for _, t in stack)))
        else:
            prose.append(lines[i])
        i += 1
    flush_prose()
    return units


def _fence_end(lines: list[str], start: int, opener: str) -> int:
    """Index after the closing fence (same character, at least as long); an open fence runs to the end."""
    for j in range(start + 1, len(lines)):
        close = _FENCE.match(lines[j])
        if (
            close
            and close.group(1)[0] == opener[0]
            and len(close.group(1)) >= len(opener)
            and not lines[j][close.end() :].strip()
        ):
            return j + 1
    return len(lines)


def _pack(units: list[_Unit], size: int, overlap: int) -> list[list[_Unit]]:
    """Group units into chunks: a heading closes the running chunk, a full chunk hands on its overlap."""
    groups: list[list[_Unit]] = []
    buf: list[_Unit] = []
    queue = deque(units)
    while queue:
        unit = queue.popleft()
        body = any(u.kind != "heading" and u.text.strip() for u in buf)
        if unit.kind == "heading" and body:
            groups.append(buf)
            buf = []
            queue.appendleft(unit)
            continue
        if _stripped_len(buf, unit) <= size:
            pass
        elif body:
            tail = _overlap_tail(buf, overlap)
            groups.append(buf)
            buf = tail if _stripped_len(tail, unit) <= size else []
            queue.appendleft(unit)
            continue
        elif unit.kind == "fence":
            pass  # an oversized fence stays whole, after the headings it belongs to
        elif buf and unit.kind == "heading":
            groups.append(buf)
            buf = []
            queue.appendleft(unit)
            continue
        else:  # a sentence longer than the room left: hard-split it
            room = size - len(_joined(buf).lstrip())
            if room <= 0:
                groups.append(buf)
                buf = []
                queue.appendleft(unit)
                continue
            cut = _split_point(unit.text, room)
            queue.appendleft(_Unit("sentence", unit.text[cut:], unit.path))
            unit = _Unit(unit.kind, unit.text[:cut], unit.path)
        buf.append(unit)
    if buf:
        groups.append(buf)
    return groups


def _overlap_tail(buf: list[_Unit], overlap: int) -> list[_Unit]:
    """The last sentences of buf (never all of it) whose text totals at most overlap characters."""
    tail: list[_Unit] = []
    for unit in reversed(buf[1:]):
        if unit.kind != "sentence" or len(_joined([unit, *tail]).strip()) > overlap:
            break
        tail.insert(0, unit)
    return tail


def _split_point(text: str, limit: int) -> int:
    """Where to cut text to keep at most limit characters: after the last comma or space in the second
    half of the window, else at limit; never between the halves of a surrogate pair."""
    cut = limit
    soft = list(_SOFT_BREAK.finditer(text, limit // 2, limit))
    if soft:
        cut = soft[-1].end()
    if 1 < cut < len(text) and "\ud800" <= text[cut - 1] <= "\udbff" and "\udc00" <= text[cut] <= "\udfff":
        cut -= 1
    return max(cut, 1)


def _joined(units: list[_Unit]) -> str:
    return "".join(u.text for u in units)


def _stripped_len(units: list[_Unit], extra: _Unit) -> int:
    return len((_joined(units) + extra.text).strip())
