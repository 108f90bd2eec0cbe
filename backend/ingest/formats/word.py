"""Word (.docx) to Markdown, read from its XML: heading styles as '#' headings, tables as Markdown
tables, numbered and bulleted paragraphs as '- ' items, in document order.

Pages: a .docx holds no layout, but Word records where its last layout broke the pages
(w:lastRenderedPageBreak); those breaks (else the explicit page breaks) number the pages, so a citation
can say "p. 3" as the author last saw it. A document without any break has no page numbers.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from backend.ingest.formats.builder import Parsed, TableRow, TextBuilder
from backend.ingest.formats.office import core_title, main_part
from backend.ingest.formats.xml import local
from backend.ingest.formats.zipped import Archive

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"(?:heading|标题)\s*([1-9])", re.IGNORECASE)
_MAX_DEPTH = 64  # content controls and tables nest; deeper than this is not a real document


def docx_text(data: bytes, *, max_chars: int, max_unzipped_bytes: int) -> Parsed:
    """A Word document's title and Markdown text, with its pages as spans."""
    archive = Archive(data, max_unzipped_bytes=max_unzipped_bytes, kind="Word document")
    document = archive.xml(main_part(archive, default="word/document.xml"))
    body = document.find(f"{W}body")
    if body is None:
        return TextBuilder(max_chars=max_chars).parsed(None)
    reader = _Reader(TextBuilder(max_chars=max_chars, what="the Word document"), _styles(archive))
    reader.rendered = any(True for _ in body.iter(f"{W}lastRenderedPageBreak"))
    reader.blocks(body, 0)
    reader.finish()
    return reader.out.parsed(core_title(archive) or reader.first_title)


class _Reader:
    def __init__(self, out: TextBuilder, styles: dict[str, tuple[str, int]]) -> None:
        self.out = out
        self.styles = styles  # styleId -> (name, heading level or 0)
        self.rendered = False
        self.page, self.page_start = 1, 0
        self.first_title: str | None = None

    def blocks(self, parent: ET.Element, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        for child in parent:
            name = local(child.tag)
            if name == "p":
                self.paragraph(child)
            elif name == "tbl":
                self.table(child)
            elif name in ("sdt", "sdtContent", "customXml", "ins", "smartTag"):
                self.blocks(child, depth + 1)

    def paragraph(self, p: ET.Element) -> None:
        before, after = self.breaks(p)
        self.turn_pages(before)
        text = paragraph_text(p)
        style_id = _attr(p.find(f"{W}pPr/{W}pStyle"), "val")
        name, level = self.styles.get(style_id or "", ("", 0))
        outline = _attr(p.find(f"{W}pPr/{W}outlineLvl"), "val")
        if not level and outline is not None and outline.isdigit() and int(outline) < 9:
            level = min(int(outline) + 1, 6)
        if level and text.strip():
            self.out.heading(level, text)
            if name.lower() == "title" and self.first_title is None:
                self.first_title = text.strip()
        elif p.find(f"{W}pPr/{W}numPr") is not None or name.lower().startswith("list"):
            if text.strip():
                self.out.block(f"- {text.strip()}")
        else:
            self.out.block(text)
        self.turn_pages(after)

    def table(self, tbl: ET.Element) -> None:
        rows: list[list[str]] = []
        for tr in tbl.findall(f"{W}tr"):  # its own rows: a table inside a cell is that cell's text
            cells = [" ".join(paragraph_text(p) for p in tc.iter(f"{W}p")) for tc in tr.findall(f"{W}tc")]
            rows.append(cells)
        if rows:
            body: list[TableRow] = [(None, cells) for cells in rows[1:]]
            self.out.table((None, rows[0]), body)
        self.turn_pages(sum(1 for _ in self.breaks_in(tbl)))

    def breaks(self, p: ET.Element) -> tuple[int, int]:
        """Page breaks before the paragraph's first text, and after it."""
        before = after = 0
        seen_text = False
        for element in p.iter():
            tag = local(element.tag)
            if tag == "t" and (element.text or "").strip():
                seen_text = True
            elif self.is_break(element):
                if seen_text:
                    after += 1
                else:
                    before += 1
        return before, after

    def breaks_in(self, parent: ET.Element) -> list[ET.Element]:
        return [e for e in parent.iter() if self.is_break(e)]

    def is_break(self, element: ET.Element) -> bool:
        if self.rendered:
            return element.tag == f"{W}lastRenderedPageBreak"
        return element.tag == f"{W}br" and element.get(f"{W}type") == "page"

    def turn_pages(self, breaks: int) -> None:
        """Close the current page (a span, when it has text) and start the one after `breaks` breaks."""
        if breaks:
            self.out.span("page", self.page, self.page_start)
            self.page, self.page_start = self.page + breaks, self.out.length

    def finish(self) -> None:
        if self.page > 1:
            self.out.span("page", self.page, self.page_start)


def paragraph_text(p: ET.Element) -> str:
    """A paragraph's visible text: runs, tabs and line breaks; deleted text and field codes left out."""
    parts: list[str] = []
    for element in p.iter():
        tag = element.tag
        if tag == f"{W}t":
            parts.append(element.text or "")
        elif tag == f"{W}tab":
            parts.append("\t")
        elif tag in (f"{W}br", f"{W}cr") and element.get(f"{W}type") != "page":
            parts.append("\n")
    return "".join(parts)


def _styles(archive: Archive) -> dict[str, tuple[str, int]]:
    """Paragraph style ids -> (name, heading level 1-6 or 0): "Heading 2", "标题 2", "Title", or an
    outline level."""
    name = "word/styles.xml"
    if name not in archive.names:
        return {}
    styles: dict[str, tuple[str, int]] = {}
    for style in archive.xml(name).findall(f"{W}style"):
        ident = style.get(f"{W}styleId")
        if ident is None:
            continue
        label = _attr(style.find(f"{W}name"), "val") or ident
        level = 0
        if label.strip().lower() == "title":
            level = 1
        elif match := _HEADING_STYLE.fullmatch(label.strip()):
            level = min(int(match.group(1)), 6)
        else:
            outline = _attr(style.find(f"{W}pPr/{W}outlineLvl"), "val")
            if outline is not None and outline.isdigit() and int(outline) < 9:
                level = min(int(outline) + 1, 6)
        styles[ident] = (label, level)
    return styles


def _attr(element: ET.Element | None, name: str) -> str | None:
    return element.get(f"{W}{name}") if element is not None else None
