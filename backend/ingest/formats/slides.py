"""PowerPoint (.pptx) to Markdown, read from its XML: one '#' section per slide, headed by its title
("Slide N" when it has none), its text boxes in reading order (top to bottom, left to right), its
tables as Markdown tables and its speaker notes; each slide is a span, so a citation says "slide 4"."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

from backend.ingest.formats.builder import Parsed, TableRow, TextBuilder, one_line
from backend.ingest.formats.office import core_title, main_part
from backend.ingest.formats.xml import local
from backend.ingest.formats.zipped import Archive, related

P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_TITLES = frozenset({"title", "ctrTitle"})
_BULLETED = frozenset({"body", "obj", None})  # placeholders whose paragraphs are bullets (no type: body)
_MAX_GROUP_DEPTH = 20


def pptx_text(data: bytes, *, max_chars: int, max_unzipped_bytes: int) -> Parsed:
    """A deck's title and Markdown text, with each slide as a span."""
    archive = Archive(data, max_unzipped_bytes=max_unzipped_bytes, kind="PowerPoint file")
    out = TextBuilder(max_chars=max_chars, what="the presentation")
    first_title: str | None = None
    for number, name in enumerate(_slide_names(archive), start=1):
        slide = archive.xml(name)
        tree = slide.find(f"{P}cSld/{P}spTree")
        shapes = list(_reading_order(tree, 0)) if tree is not None else []
        title = next((_text(s) for s in shapes if _placeholder(s) in _TITLES and _text(s)), "")
        first_title = first_title or title or None
        with out.place("slide", number, where=f"by slide {number}"):
            out.heading(1, title or f"Slide {number}")
            for shape in shapes:
                if _placeholder(shape) not in _TITLES:
                    _shape(out, shape)
            notes = _notes(archive, name)
            if notes:
                out.block(f"Notes: {notes}")
    return out.parsed(core_title(archive) or first_title)


def _slide_names(archive: Archive) -> list[str]:
    """The slides' member names in the deck's order."""
    presentation = main_part(archive, default="ppt/presentation.xml")
    targets = related(archive, presentation)
    ids = archive.xml(presentation).findall(f"{P}sldIdLst/{P}sldId")
    names = (targets.get(s.get(f"{R}id") or "") for s in ids)
    return [name for name in names if name is not None and name in archive.names]


def _reading_order(tree: ET.Element, depth: int) -> Iterator[ET.Element]:
    """The shapes top to bottom, then left to right; a group's shapes take its place."""
    shapes = [c for c in tree if local(c.tag) in ("sp", "grpSp", "graphicFrame")]
    for shape in sorted(shapes, key=_position):
        if local(shape.tag) == "grpSp":
            if depth < _MAX_GROUP_DEPTH:
                yield from _reading_order(shape, depth + 1)
        else:
            yield shape


def _position(shape: ET.Element) -> tuple[int, int]:
    offset = next((e for e in shape.iter(f"{A}off")), None)
    if offset is None:
        return (0, 0)
    return (_int(offset.get("y")), _int(offset.get("x")))


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _placeholder(shape: ET.Element) -> str | None:
    """The placeholder type of a shape ("title", "body", ...); "" when it is not a placeholder."""
    ph = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
    return "" if ph is None else ph.get("type")


def _text(shape: ET.Element) -> str:
    return one_line(" ".join(_paragraph(p) for p in shape.iter(f"{A}p")))


def _paragraph(p: ET.Element) -> str:
    parts = []
    for element in p.iter():
        if element.tag == f"{A}t":
            parts.append(element.text or "")
        elif element.tag == f"{A}br":
            parts.append(" ")
    return "".join(parts)


def _shape(out: TextBuilder, shape: ET.Element) -> None:
    table = next(shape.iter(f"{A}tbl"), None)
    if table is not None:
        rows = [[_cell(tc) for tc in tr.findall(f"{A}tc")] for tr in table.findall(f"{A}tr")]
        if rows:
            body: list[TableRow] = [(None, cells) for cells in rows[1:]]
            out.table((None, rows[0]), body)
        return
    body_element = shape.find(f"{P}txBody")
    if body_element is None:
        return
    bulleted = _placeholder(shape) in _BULLETED
    lines = []
    for p in body_element.findall(f"{A}p"):
        text = one_line(_paragraph(p))
        if not text:
            continue
        ppr = p.find(f"{A}pPr")
        level = _int(ppr.get("lvl")) if ppr is not None else 0
        lines.append(f"{'  ' * min(level, 8)}- {text}" if bulleted or level else text)
    out.block("\n".join(lines))


def _cell(tc: ET.Element) -> str:
    return " ".join(_paragraph(p) for p in tc.iter(f"{A}p"))


def _notes(archive: Archive, slide: str) -> str:
    """The speaker notes of a slide (its notes slide's body placeholder)."""
    for name in related(archive, slide, "/notesSlide").values():
        tree = archive.xml(name).find(f"{P}cSld/{P}spTree") if name in archive.names else None
        if tree is not None:
            texts = (_text(s) for s in _reading_order(tree, 0) if _placeholder(s) == "body")
            return "\n".join(t for t in texts if t)
    return ""
