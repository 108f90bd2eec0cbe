"""PDFs built with pypdf for tests and benches: ordinary text pages, and the hostile shape of issue 24
(many pages drawing one heavy content stream). Built here, so no binary fixture of unknown origin."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def _writer_with_font() -> tuple[PdfWriter, DictionaryObject]:
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    resources = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    return writer, resources


def _page(writer: PdfWriter, resources: DictionaryObject, contents: object) -> None:
    page = writer.add_blank_page(612, 792)
    page[NameObject("/Resources")] = resources
    page[NameObject("/Contents")] = contents


def _bytes(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_pdf(pages: list[str], lines_per_page: int = 40) -> bytes:
    """One page per string, its text repeated on `lines_per_page` lines (an ordinary document)."""
    writer, resources = _writer_with_font()
    for text in pages:
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        lines = b"".join(b"(%s) Tj 0 -14 Td " % escaped for _ in range(lines_per_page))
        stream = DecodedStreamObject()
        stream.set_data(b"BT /F1 10 Tf 50 750 Td " + lines + b"ET")
        _page(writer, resources, writer._add_object(stream.flate_encode()))
    return _bytes(writer)


def shared_stream_pdf(pages: int, operators: int) -> bytes:
    """`pages` pages that all draw one content stream of `operators` text-showing operators: a few kB
    that pypdf parses once per page (~0.7 s a page at 20,000 operators)."""
    writer, resources = _writer_with_font()
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 1 Tf " + b"(a) Tj " * operators + b"ET")
    contents = writer._add_object(stream.flate_encode())
    for _ in range(pages):
        _page(writer, resources, contents)
    return _bytes(writer)
