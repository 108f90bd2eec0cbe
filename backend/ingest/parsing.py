"""The parsers of untrusted files, as they run inside the parse sandbox (backend/ingest/sandbox.py).

Each takes bytes (or text) and returns what it read (a Parsed: title, text, and the places the text
came from), stopping as soon as a limit is reached: a PDF is refused past PDF_MAX_PAGES before any page
is read, and its extraction stops at the page that takes its text past MAX_DOCUMENT_CHARS; a zip-based
file (Office, EPUB) is refused past PARSE_MAX_UNZIPPED_MB before anything is inflated. Time and memory
are bounded by the process that runs them. This module imports only what parsing needs: the sandbox's
forkserver preloads it, and every parse starts from that copy.
"""

from __future__ import annotations

import io

from pypdf import PdfReader

from backend.errors import UnsupportedDocument
from backend.ingest.decoding import decode_text
from backend.ingest.formats.builder import LimitReached, Parsed
from backend.ingest.formats.epub import epub_text
from backend.ingest.formats.sheets import csv_text, xlsx_text
from backend.ingest.formats.slides import pptx_text
from backend.ingest.formats.word import docx_text
from backend.ingest.formats.zipped import is_encrypted_office_file
from backend.ingest.html_text import html_to_article_text, html_to_text
from backend.ingest.provenance import Span
from backend.text.normalize import clean_document_text

__all__ = ["LimitReached", "Parsed", "document", "html_page_text"]

ZIPPED = {"docx": docx_text, "pptx": pptx_text, "xlsx": xlsx_text, "epub": epub_text}


def document(kind: str, data: bytes, *, max_pages: int, max_chars: int, max_unzipped_bytes: int) -> Parsed:
    """One uploaded file of a kind (pdf, html, csv, tsv, docx, pptx, xlsx, epub), parsed."""
    if kind == "pdf":
        return pdf_text(data, max_pages=max_pages, max_chars=max_chars)
    if kind == "html":
        return html_document_text(data, max_chars=max_chars)
    if kind in ("csv", "tsv"):
        return csv_text(data, max_chars=max_chars, tab_separated=kind == "tsv")
    if is_encrypted_office_file(data):
        raise UnsupportedDocument(
            "the file is password-protected (or an old binary Office file): save it without a password "
            "as .docx, .pptx or .xlsx"
        )
    parse = ZIPPED.get(kind)
    if parse is None:
        raise UnsupportedDocument(f"unsupported type {kind}")
    return parse(data, max_chars=max_chars, max_unzipped_bytes=max_unzipped_bytes)


def pdf_text(data: bytes, *, max_pages: int, max_chars: int) -> Parsed:
    """Title (from the PDF metadata) and page texts joined by blank lines, each page a span."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnsupportedDocument("encrypted PDF (a password is required)")
        count = len(reader.pages)
        if count > max_pages:
            raise LimitReached(
                f"the PDF has {count} pages; the limit is {max_pages}", setting="PDF_MAX_PAGES"
            )
        pages: list[str] = []
        chars = 0
        for number, page in enumerate(reader.pages, start=1):
            text = clean_document_text(page.extract_text() or "")
            pages.append(text)
            chars += len(text) + 2
            if chars > max_chars:
                raise LimitReached(
                    f"the PDF's text passes {max_chars} characters by page {number} of {count}",
                    setting="MAX_DOCUMENT_CHARS",
                )
        title = reader.metadata.title if reader.metadata else None
    except (UnsupportedDocument, LimitReached, MemoryError):
        raise
    except Exception as exc:  # pypdf raises a dozen types (and plain ValueError/KeyError) on broken files
        raise UnsupportedDocument(f"cannot read PDF (damaged or not a PDF): {exc}") from exc
    spans: list[Span] = []
    offset = 0
    for number, page_text in enumerate(pages, start=1):
        if page_text:
            spans.append(Span(offset, offset + len(page_text), "page", number))
            offset += len(page_text) + 2
    content = "\n\n".join(page for page in pages if page)
    if not content:
        raise UnsupportedDocument("PDF has no extractable text (scanned or image-only; OCR is not supported)")
    return Parsed(title.strip() if isinstance(title, str) else None, content, tuple(spans))


def html_document_text(data: bytes, *, max_chars: int) -> Parsed:
    """An uploaded HTML file: its title and readable text."""
    title, content = html_to_text(decode_text(data))
    content = clean_document_text(content)
    if len(content) > max_chars:
        raise LimitReached(
            f"the page's text has {len(content)} characters; the limit is {max_chars}",
            setting="MAX_DOCUMENT_CHARS",
        )
    return Parsed(title, content)


def html_page_text(html: str) -> tuple[str | None, str]:
    """A web page read in full: its title and article text (the caller truncates it)."""
    return html_to_article_text(html)
