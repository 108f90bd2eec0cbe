"""Small Word, PowerPoint, Excel and EPUB files made in the test, as their applications lay them out
(only the parts a reader needs), so no binary fixture of unknown origin is checked in."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from xml.sax.saxutils import escape

_RELS_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
_SLIDE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"
_NOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'

Block = str | tuple[str, str] | tuple[str, Sequence[Sequence[str]]]


def zipped(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _rels(*targets: tuple[str, str, str]) -> str:
    items = "".join(f'<Relationship Id="{i}" Type="{t}" Target="{g}"/>' for i, t, g in targets)
    return f'{_XML}<Relationships xmlns="{_RELS_NS}">{items}</Relationships>'


def _core(title: str | None) -> str:
    value = f"<dc:title>{escape(title)}</dc:title>" if title else ""
    return (
        f'{_XML}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
        f'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">{value}</cp:coreProperties>'
    )


# --- Word -----------------------------------------------------------------------------------------


def make_docx(blocks: Sequence[Block], *, title: str | None = None, rendered_breaks: bool = False) -> bytes:
    """A .docx of blocks: "text" (a paragraph), ("Heading1" | "Title" | "ListParagraph", text),
    ("table", rows), ("page", "") (a page break: explicit, or as Word's last layout records it)."""
    body = []
    pending_break = False
    for block in blocks:
        if isinstance(block, str):
            block = ("", block)
        kind, value = block
        if kind == "page":
            if rendered_breaks:
                pending_break = True
            else:
                body.append('<w:p><w:r><w:br w:type="page"/></w:r></w:p>')
            continue
        if kind == "table":
            rows = "".join(
                "<w:tr>" + "".join(f"<w:tc>{_w_paragraph('', c, False)}</w:tc>" for c in row) + "</w:tr>"
                for row in value
            )
            body.append(f"<w:tbl>{rows}</w:tbl>")
            continue
        assert isinstance(value, str)
        body.append(_w_paragraph(kind, value, pending_break))
        pending_break = False
    document = f'{_XML}<w:document xmlns:w="{_W}"><w:body>{"".join(body)}</w:body></w:document>'
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="{ident}"><w:name w:val="{name}"/></w:style>'
        for ident, name in (
            ("Title", "Title"),
            ("Heading1", "heading 1"),
            ("Heading2", "heading 2"),
            ("ListParagraph", "List Paragraph"),
        )
    )
    return zipped(
        {
            "[Content_Types].xml": _content_types("word/document.xml", "wordprocessingml.document.main"),
            "_rels/.rels": _rels(("rId1", _OFFICE_DOC, "word/document.xml")),
            "word/document.xml": document,
            "word/styles.xml": f'{_XML}<w:styles xmlns:w="{_W}">{styles}</w:styles>',
            "docProps/core.xml": _core(title),
        }
    )


def _w_paragraph(style: str, text: str, rendered_break: bool) -> str:
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    brk = "<w:lastRenderedPageBreak/>" if rendered_break else ""
    return f'<w:p>{ppr}<w:r>{brk}<w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'


def _content_types(part: str, main: str) -> str:
    return (
        f'{_XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/{part}" '
        f'ContentType="application/vnd.openxmlformats-officedocument.{main}+xml"/>'
        "</Types>"
    )


# --- PowerPoint -----------------------------------------------------------------------------------

Slide = dict[str, object]  # {"title": str, "body": [str], "table": [[str]], "notes": str}


def make_pptx(slides: Sequence[Slide], *, title: str | None = None) -> bytes:
    """A .pptx whose slides have a title placeholder, a body of bullets, a table, speaker notes."""
    members: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types("ppt/presentation.xml", "presentationml.presentation.main"),
        "_rels/.rels": _rels(("rId1", _OFFICE_DOC, "ppt/presentation.xml")),
        "docProps/core.xml": _core(title),
    }
    ids, rels = [], []
    for n, slide in enumerate(slides, start=1):
        ids.append(f'<p:sldId id="{255 + n}" r:id="rId{n}"/>')
        rels.append((f"rId{n}", _SLIDE_REL, f"slides/slide{n}.xml"))
        members[f"ppt/slides/slide{n}.xml"] = _slide(slide)
        if slide.get("notes"):
            members[f"ppt/slides/_rels/slide{n}.xml.rels"] = _rels(
                ("rId1", _NOTES_REL, f"../notesSlides/notesSlide{n}.xml")
            )
            members[f"ppt/notesSlides/notesSlide{n}.xml"] = _sld(_sp("body", [str(slide["notes"])], 0))
    members["ppt/presentation.xml"] = (
        f'{_XML}<p:presentation xmlns:p="{_P}" xmlns:r="{_R}"><p:sldIdLst>{"".join(ids)}</p:sldIdLst>'
        "</p:presentation>"
    )
    members["ppt/_rels/presentation.xml.rels"] = _rels(*rels)
    return zipped(members)


def _slide(slide: Slide) -> str:
    shapes = []
    if slide.get("title"):
        shapes.append(_sp("title", [str(slide["title"])], 0))
    body = slide.get("body")
    if isinstance(body, list) and body:
        shapes.append(_sp("body", [str(b) for b in body], 2000000))
    table = slide.get("table")
    if isinstance(table, list) and table:
        rows = "".join(
            "<a:tr>"
            + "".join(f"<a:tc><a:txBody>{_a_paragraph(c)}</a:txBody></a:tc>" for c in row)
            + "</a:tr>"
            for row in table
        )
        shapes.append(
            '<p:graphicFrame><p:xfrm><a:off x="0" y="4000000"/></p:xfrm><a:graphic><a:graphicData>'
            f"<a:tbl>{rows}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>"
        )
    return _sld("".join(reversed(shapes)))  # stored bottom first: the reader sorts by position


def _sld(shapes: str) -> str:
    return (
        f'{_XML}<p:sld xmlns:p="{_P}" xmlns:a="{_A}" xmlns:r="{_R}"><p:cSld><p:spTree>{shapes}'
        "</p:spTree></p:cSld></p:sld>"
    )


def _sp(placeholder: str, paragraphs: list[str], y: int) -> str:
    paras = "".join(_a_paragraph(t) for t in paragraphs)
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="1" name="s"/><p:cNvSpPr/><p:nvPr><p:ph type="{placeholder}"/>'
        f'</p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="0" y="{y}"/></a:xfrm></p:spPr>'
        f"<p:txBody>{paras}</p:txBody></p:sp>"
    )


def _a_paragraph(text: str) -> str:
    return f"<a:p><a:r><a:t>{escape(text)}</a:t></a:r></a:p>"


# --- Excel and EPUB -------------------------------------------------------------------------------


def make_xlsx(sheets: dict[str, Sequence[Sequence[object]]], *, title: str | None = None) -> bytes:
    """A workbook written by openpyxl: one sheet per entry, rows from row 1 (None leaves a cell empty)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    if title:
        book.properties.title = title
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def make_epub(chapters: Sequence[tuple[str, str]], *, title: str = "A Book") -> bytes:
    """An EPUB of (chapter title, paragraph text) chapters."""
    items, spine, members = [], [], {}
    for n, (heading, text) in enumerate(chapters, start=1):
        items.append(f'<item id="c{n}" href="text/c{n}.xhtml" media-type="application/xhtml+xml"/>')
        spine.append(f'<itemref idref="c{n}"/>')
        members[f"OEBPS/text/c{n}.xhtml"] = (
            f'{_XML}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{escape(heading)}</title></head>'
            f"<body><h1>{escape(heading)}</h1><p>{escape(text)}</p></body></html>"
        )
    opf = (
        f'{_XML}<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
        f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{escape(title)}</dc:title></metadata>'
        f"<manifest>{''.join(items)}</manifest><spine>{''.join(spine)}</spine></package>"
    )
    container = (
        f'{_XML}<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    return zipped(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "OEBPS/content.opf": opf,
            **members,
        }
    )
