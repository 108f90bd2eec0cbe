"""Chunking: Markdown sections, Chinese/English sentences packed up to a size, a small sentence overlap.

Code fences stay whole. A chunk opening a section starts with its heading line ("## 安装"), which the
reranker rewards; later chunks of the section carry the heading only in heading_path. A Markdown table
is split only between rows (a row, like a fence, is never cut), and a chunk that continues a table
starts with the table's header row again, so every piece reads as a table with named columns.

Each chunk says where it lies in the text: text[start:end] is its content, except that a continued
table's repeated header row comes before that slice (the content then ends with it).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace

# Types whose loaders emit Markdown ('#' headings, '|' tables): HTML, and the office formats and
# spreadsheets of backend/ingest/formats.
MARKDOWN_TYPES = frozenset(
    {
        "text/markdown",
        "text/x-markdown",
        "text/html",
        "text/csv",
        "text/tab-separated-values",
        "application/epub+zip",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }
)

_LINE = re.compile(r"[^\n]*\n|[^\n]+")
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\n?")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# A GFM table: a row with a pipe, then a delimiter row such as "| --- | :-: |"; it runs to a line
# without a pipe (or a blank line).
_TABLE_DELIMITER = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*\n?")
_CLOSERS = "\"'”’」』)）\\]"
# A sentence ends after 。！？；!?; (and closing quotes), after '.' before a space, or at a line break.
_SENTENCE_END = re.compile(rf"(?:[。！？；!?;…]+|\.(?=[\s{_CLOSERS}]))[{_CLOSERS}]*[ \t]*|\n\s*")
_SOFT_BREAK = re.compile(r"[，、,：:；;\s]")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its 0-based position, text, the Markdown headings above it, and the
    character range of the text it was cut from (text[start:end] ends its content)."""

    position: int
    content: str
    heading_path: tuple[str, ...]
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class _Unit:
    kind: str  # "heading" | "fence" | "sentence" | "table" (header, delimiter, first row) | "row"
    text: str  # a slice of the input: the units of a document concatenate back to it
    path: tuple[str, ...]
    start: int = 0  # where text starts in the input
    head: str = ""  # a row's table header and delimiter lines, repeated when a chunk opens with the row


_ATOMIC = frozenset({"fence", "table", "row"})  # never cut, even when longer than a chunk


def chunk_text(text: str, *, content_type: str, size: int = 500, overlap: int = 50) -> list[Chunk]:
    """Split text into chunks of at most size characters (a longer code fence stays whole)."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got size={size}, overlap={overlap}")
    if content_type.split(";")[0].strip().lower() in MARKDOWN_TYPES:
        units = _markdown_units(text)
    else:
        units = _placed([_Unit("sentence", s, ()) for s in split_sentences(text)])
    chunks: list[Chunk] = []
    for group in _pack(units, size, overlap):
        raw = _joined(group)
        body = raw.strip()
        if body:
            start = group[0].start + len(raw) - len(raw.lstrip())
            chunks.append(Chunk(len(chunks), _text(group).strip(), group[-1].path, start, start + len(body)))
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
        if _is_table_start(lines, i):
            flush_prose()
            end = _table_end(lines, i)
            path = tuple(t for _, t in stack)
            head = "".join(lines[i : i + 2])
            units.append(_Unit("table", "".join(lines[i : min(i + 3, end)]), path))
            units.extend(_Unit("row", line, path, head=head) for line in lines[i + 3 : end])
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
    return _placed(units)


def _placed(units: list[_Unit]) -> list[_Unit]:
    """The units with their start offsets (they concatenate back to the text)."""
    placed: list[_Unit] = []
    offset = 0
    for unit in units:
        placed.append(replace(unit, start=offset))
        offset += len(unit.text)
    return placed


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        "|" in lines[i]
        and bool(lines[i].strip())
        and i + 1 < len(lines)
        and _TABLE_DELIMITER.fullmatch(lines[i + 1]) is not None
    )


def _table_end(lines: list[str], start: int) -> int:
    """Index after the table's last row: the first line (after the delimiter) without a pipe."""
    end = start + 2
    while end < len(lines) and "|" in lines[end] and lines[end].strip():
        end += 1
    return end


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
        elif unit.kind in _ATOMIC:
            pass  # an oversized fence, table head or row stays whole, after the headings it belongs to
        elif buf and unit.kind == "heading":
            groups.append(buf)
            buf = []
            queue.appendleft(unit)
            continue
        else:  # a sentence longer than the room left: hard-split it
            room = size - len(_text(buf).lstrip())
            if room <= 0:
                groups.append(buf)
                buf = []
                queue.appendleft(unit)
                continue
            cut = _split_point(unit.text, room)
            queue.appendleft(_Unit("sentence", unit.text[cut:], unit.path, unit.start + cut))
            unit = _Unit(unit.kind, unit.text[:cut], unit.path, unit.start)
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


def _text(units: list[_Unit]) -> str:
    """What a chunk of these units reads: a chunk that opens with a table's row repeats its header."""
    head = units[0].head if units and units[0].kind == "row" else ""
    return head + _joined(units)


def _stripped_len(units: list[_Unit], extra: _Unit) -> int:
    return len(_text([*units, extra]).strip())
