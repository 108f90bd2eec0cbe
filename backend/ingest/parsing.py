"""The parsers of untrusted files, as they run inside the parse sandbox (backend/ingest/sandbox.py).

Each takes bytes (or text) and returns (title, text), stopping as soon as a limit is reached: a PDF is
refused past PDF_MAX_PAGES before any page is read, and its extraction stops at the page that takes
its text past MAX_DOCUMENT_CHARS. Time and memory are bounded by the process that runs them. This
module imports only what parsing needs: the sandbox's forkserver preloads it, and every parse
starts from that copy.
"""

from __future__ import annotations

import io

from pypdf import PdfReader

from backend.errors import UnsupportedDocument
from backend.ingest.decoding import decode_text
from backend.ingest.html_text import html_to_article_text, html_to_text
from backend.text.normalize import clean_document_text


class LimitReached(Exception):
    """A parse stopped at a limit; `setting` names it (e.g. PDF_MAX_PAGES)."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def pdf_text(data: bytes, *, max_pages: int, max_chars: int) -> tuple[str | None, str]:
    """Title (from the PDF metadata) and page texts joined by blank lines."""
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
    content = "\n\n".join(page for page in pages if page)
    if not content:
        raise UnsupportedDocument("PDF has no extractable text (scanned or image-only; OCR is not supported)")
    return (title.strip() if isinstance(title, str) else None), content


def html_document_text(data: bytes, *, max_chars: int) -> tuple[str | None, str]:
    """An uploaded HTML file: its title and readable text."""
    title, content = html_to_text(decode_text(data))
    content = clean_document_text(content)
    if len(content) > max_chars:
        raise LimitReached(
            f"the page's text has {len(content)} characters; the limit is {max_chars}",
            setting="MAX_DOCUMENT_CHARS",
        )
    return title, content


def html_page_text(html: str) -> tuple[str | None, str]:
    """A web page read in full: its title and article text (the caller truncates it)."""
    return html_to_article_text(html)
