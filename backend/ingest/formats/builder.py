"""The text a parser builds: Markdown blocks joined by blank lines, with the places they came from.

Every block is cleaned as backend.text.normalize.clean_document_text would clean the whole, so the
built text is already clean and the offsets of its spans stay true after ingestion cleans it again.
The builder stops the parse (LimitReached) as soon as the text passes MAX_DOCUMENT_CHARS.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from backend.ingest.provenance import Span, SpanKind
from backend.text.normalize import clean_document_text

_SPACE = re.compile(r"\s+")


class LimitReached(Exception):
    """A parse stopped at a limit; `setting` names it (e.g. PDF_MAX_PAGES)."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class Parsed:
    """What a parser gives back: a title (None: the file name will do), the text, the spans."""

    title: str | None
    text: str
    spans: tuple[Span, ...] = ()


def one_line(value: object) -> str:
    """A cell or heading as one clean line: whitespace folded, no control characters."""
    return _SPACE.sub(" ", clean_document_text(str(value))).strip()


def table_cell(value: object) -> str:
    """A Markdown table cell: one line, its pipes escaped."""
    return one_line(value).replace("|", "\\|")


def table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


TableRow = tuple[int | None, Sequence[object]]  # (its number where the file numbers rows, its cells)


class TextBuilder:
    """Appends blocks and tables, records spans, and refuses to grow past max_chars."""

    def __init__(self, *, max_chars: int, what: str = "the document") -> None:
        self._parts: list[str] = []
        self._length = 0
        self._spans: list[Span] = []
        self.max_chars = max_chars
        self.what = what
        self._where = ""  # "by slide 12": said when the limit is passed

    @property
    def length(self) -> int:
        return self._length

    def block(self, text: str) -> tuple[int, int] | None:
        """Append a block of text (cleaned); its (start, end), or None when it has no text."""
        clean = clean_document_text(text)
        if not clean:
            return None
        start = self._length + (2 if self._parts else 0)
        if start + len(clean) > self.max_chars:
            self.refuse(self._where)
        self._parts.append(clean)
        self._length = start + len(clean)
        return start, self._length

    def refuse(self, where: str = "") -> None:
        """Stop the parse: the text passes max_chars (`where`: "by row 12")."""
        raise LimitReached(
            f"{self.what}'s text passes {self.max_chars} characters{' ' + where if where else ''}",
            setting="MAX_DOCUMENT_CHARS",
        )

    def heading(self, level: int, title: str) -> tuple[int, int] | None:
        title = one_line(title)
        return self.block(f"{'#' * max(1, min(level, 6))} {title}") if title else None

    def table(self, header: TableRow, rows: Sequence[TableRow]) -> None:
        """A Markdown table: the header row, a delimiter, the body rows; a row with a number (a
        spreadsheet's or CSV's) becomes a "row" span. Ragged rows are padded to the widest."""
        cells = [[table_cell(c) for c in header[1]], *([table_cell(c) for c in r[1]] for r in rows)]
        width = max(len(c) for c in cells)
        if width == 0:
            return
        lines = [table_row(_padded(c, width)) for c in cells]
        lines.insert(1, table_row(["---"] * width))
        placed = self.block("\n".join(lines))
        if placed is None:
            return
        offset = placed[0]
        numbered = [header[0], None, *(r[0] for r in rows)]
        for number, line in zip(numbered, lines, strict=True):
            if number is not None:
                self._spans.append(Span(offset, offset + len(line), "row", number))
            offset += len(line) + 1

    @contextmanager
    def place(self, kind: SpanKind, number: int, where: str = "") -> Iterator[None]:
        """Everything appended inside is one span of this kind; `where` ("by page 3") completes the
        message of a limit passed inside."""
        self._where = where
        start = self._length
        yield
        self.span(kind, number, start)

    def span(self, kind: SpanKind, number: int, start: int) -> None:
        """A span over what was appended since the text was `start` characters long (if anything)."""
        if self._length > start:
            begin = start + 2 if start else 0  # past the blank line before the first block since
            self._spans.append(Span(begin, self._length, kind, number))

    def parsed(self, title: str | None) -> Parsed:
        text = "\n\n".join(self._parts)
        return Parsed(one_line(title) or None if title else None, text, tuple(self._spans))


def _padded(cells: list[str], width: int) -> list[str]:
    return cells + [""] * (width - len(cells))
