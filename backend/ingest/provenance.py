"""Where a chunk came from: character offsets into its document's text, and the pages, slides, sheet
rows or chapters those characters were read from.

A parser marks places in the text it builds as Spans (backend/ingest/formats/builder.py): a PDF or
Word page, a slide, a sheet and each of its rows, an EPUB chapter. A chunk's Provenance is its
character range and the first and last place of each kind that range overlaps. It is stored with the
chunk, under the "provenance" key of its metadata (which every retrieval function already returns, so
no search path changes), and travels with every source of /search, /chat and /research.

Places are numbers only: a sheet's or chapter's name is the chunk's heading already (the parsers head
each with it), and a source's heading is what the erasure of a deleted document's copies blanks
(migration 018), so no name of a deleted document outlives it in a stored answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SpanKind = Literal["page", "slide", "sheet", "row", "chapter"]
PROVENANCE_KEY = "provenance"  # the chunk metadata key it is stored under
_KINDS: tuple[SpanKind, ...] = ("page", "slide", "sheet", "row", "chapter")


@dataclass(frozen=True)
class Span:
    """A place in a document's text: text[start:end] was read from page, slide, sheet, row or chapter
    `number` (1-based; a row's number is the one its spreadsheet or CSV file shows)."""

    start: int
    end: int
    kind: SpanKind
    number: int


class Provenance(BaseModel):
    """A chunk's place in its document (what a citation shows: "p. 12", "slide 4", "sheet 2, rows 10–20")."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    char_start: int = Field(ge=0, description="where the chunk's text starts in the document's text")
    char_end: int = Field(ge=0, description="where it ends (exclusive)")
    page_start: int | None = Field(default=None, description="PDF (Word: as last laid out): first page")
    page_end: int | None = Field(default=None, description="last page")
    slide_start: int | None = Field(default=None, description="PowerPoint: first slide")
    slide_end: int | None = Field(default=None, description="last slide")
    sheet_start: int | None = Field(default=None, description="Excel: first sheet (its heading is its name)")
    sheet_end: int | None = Field(default=None, description="last sheet")
    row_start: int | None = Field(default=None, description="Excel or CSV: first row (its number there)")
    row_end: int | None = Field(default=None, description="last row")
    chapter_start: int | None = Field(default=None, description="EPUB: first chapter, in reading order")
    chapter_end: int | None = Field(default=None, description="last chapter")

    def stored(self) -> dict[str, int]:
        """The value stored with the chunk (only what is known)."""
        return self.model_dump(exclude_none=True)

    def label(self, lang: str = "en") -> str:
        """A short label: "p. 12", "pp. 3–4", "slide 4", "sheet 2, rows 10–20", "ch. 3"; with lang "zh"
        "第 12 页", "第 4 张幻灯片", … (the page's own labels, backend/webapp/i18n.js)."""
        forms = _FORMS["zh" if lang == "zh" else "en"]
        ranges = {
            "page": (self.page_start, self.page_end),
            "slide": (self.slide_start, self.slide_end),
            "sheet": (self.sheet_start, self.sheet_end),
            "row": (self.row_start, self.row_end),
            "chapter": (self.chapter_start, self.chapter_end),
        }
        parts = [
            _ranged(*forms[kind], start, end) for kind, (start, end) in ranges.items() if start is not None
        ]
        return ("，" if lang == "zh" else ", ").join(parts)


# Per kind: the form for one place and for a range ({n}, {a}, {b}).
_FORMS: dict[str, dict[str, tuple[str, str]]] = {
    "en": {
        "page": ("p. {n}", "pp. {a}–{b}"),
        "slide": ("slide {n}", "slides {a}–{b}"),
        "sheet": ("sheet {n}", "sheets {a}–{b}"),
        "row": ("row {n}", "rows {a}–{b}"),
        "chapter": ("ch. {n}", "chs. {a}–{b}"),
    },
    "zh": {
        "page": ("第 {n} 页", "第 {a}–{b} 页"),
        "slide": ("第 {n} 张幻灯片", "第 {a}–{b} 张幻灯片"),
        "sheet": ("工作表 {n}", "工作表 {a}–{b}"),
        "row": ("第 {n} 行", "第 {a}–{b} 行"),
        "chapter": ("第 {n} 章", "第 {a}–{b} 章"),
    },
}


def _ranged(one: str, many: str, start: int | None, end: int | None) -> str:
    return one.format(n=start) if end in (None, start) else many.format(a=start, b=end)


class SourceMap:
    """The spans of one document, by kind and in text order, for locating chunks."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self._by_kind: dict[str, list[Span]] = {}
        for span in sorted(spans, key=lambda s: s.start):
            self._by_kind.setdefault(span.kind, []).append(span)
        self._ends = {kind: [s.end for s in found] for kind, found in self._by_kind.items()}

    def locate(self, start: int, end: int) -> Provenance:
        """The provenance of text[start:end]."""
        fields: dict[str, int] = {"char_start": start, "char_end": end}
        for kind in _KINDS:
            found = self._overlapping(kind, start, end)
            if found:
                fields[f"{kind}_start"] = found[0].number
                fields[f"{kind}_end"] = found[-1].number
        return Provenance.model_validate(fields)

    def _overlapping(self, kind: str, start: int, end: int) -> list[Span]:
        """The spans of one kind (which never overlap each other) that share a character with the range."""
        spans = self._by_kind.get(kind)
        if not spans:
            return []
        found: list[Span] = []
        for span in spans[bisect.bisect_right(self._ends[kind], start) :]:
            if span.start >= end:
                break
            found.append(span)
        return found


def source_provenance(metadata: object) -> dict[str, Any] | None:
    """What a source says of where its chunk came from: the stored provenance and its label (None for
    chunks stored before provenance was, and for web pages)."""
    stored = metadata.get(PROVENANCE_KEY) if isinstance(metadata, dict) else None
    if not isinstance(stored, dict):
        return None
    provenance = Provenance.model_validate(stored)
    return {**provenance.stored(), "label": provenance.label()}


@dataclass(frozen=True)
class TextWindow:
    """A stretch of a document's text, rebuilt from its chunks: text is the document's [start, end)."""

    start: int
    end: int
    text: str


def text_window(pieces: Sequence[tuple[int, int, str]], start: int, end: int) -> TextWindow | None:
    """The document's text over [start, end) from (char_start, char_end, content) of its chunks: a
    chunk's content ends with the text of its range (a continued table repeats its header first).
    What no chunk covers (the blank lines between them) reads as a line break; None when nothing does."""
    chars: dict[int, str] = {}
    for chunk_start, chunk_end, content in pieces:
        length = chunk_end - chunk_start
        low, high = max(start, chunk_start), min(end, chunk_end)
        if length <= 0 or length > len(content) or low >= high:
            continue
        own = len(content) - length  # where the chunk's own text starts in its content
        for offset in range(low, high):  # only the overlap: a huge atomic chunk costs the window
            chars[offset] = content[own + offset - chunk_start]
    if not chars:
        return None
    first, last = min(chars), max(chars) + 1
    return TextWindow(first, last, "".join(chars.get(i, "\n") for i in range(first, last)))
