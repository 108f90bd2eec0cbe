"""Untrusted files are parsed within bounds (issue 24, finding 7): a PDF whose pages share one heavy
content stream took 32 s of CPU for 40 kB in a server thread, with no time, memory or page bound, and
MAX_DOCUMENT_CHARS was checked only after the whole text was extracted. Now the upload is a 413 that
names the limit, in about the limit's time. The hostile files are built here, with pypdf.
"""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.errors import ParseLimitExceeded
from backend.ingest.sandbox import ParseLimits, parse_html_document, parse_pdf
from backend.testing.pdfs import shared_stream_pdf
from tests.test_loaders import make_pdf


def nested_html(depth: int) -> bytes:
    """Elements nested `depth` deep: lexbor's cost grows with the square of the depth (~10 s at 40,000)."""
    return b"<html><body>" + b"<div>x" * depth + b"</div>" * depth + b"</body></html>"


@pytest.fixture
def bounded(make_services):
    """The API with tight parse limits."""

    def make(**limits):
        return TestClient(create_app(services=make_services(**limits)))

    return make


def upload(client: TestClient, name: str, data: bytes, content_type: str):
    return client.post("/documents/upload", files=[("files", (name, data, content_type))])


def test_a_pdf_of_pages_sharing_one_heavy_stream_stops_at_the_time_limit(bounded):
    hostile = shared_stream_pdf(pages=40, operators=20_000)  # ~28 s of extraction without a bound
    assert len(hostile) < 10_000
    with bounded(parse_timeout_s=2) as client:
        started = time.monotonic()
        response = upload(client, "shared.pdf", hostile, "application/pdf")
        elapsed = time.monotonic() - started
        assert response.status_code == 413, response.text
        assert (
            response.json()["detail"]
            == "shared.pdf: parsing the file takes longer than 2 s (PARSE_TIMEOUT_S)"
        )
        assert elapsed < 10
        assert client.get("/documents").json()["total"] == 0
        # the server is unharmed: the next upload is read as usual
        assert upload(client, "ok.pdf", make_pdf(["Kangaroos hop."]), "application/pdf").status_code == 200


def test_extraction_stops_once_the_text_passes_max_document_chars(bounded):
    hostile = shared_stream_pdf(pages=40, operators=20_000)  # 20,000 characters a page
    with bounded(max_document_chars=30_000, parse_timeout_s=20) as client:
        started = time.monotonic()
        response = upload(client, "long.pdf", hostile, "application/pdf")
        assert response.status_code == 413, response.text
        assert response.json()["detail"] == (
            "long.pdf: the PDF's text passes 30000 characters by page 2 of 40 (MAX_DOCUMENT_CHARS)"
        )
        assert time.monotonic() - started < 10  # two pages read, not forty


def test_a_pdf_over_the_page_limit_is_refused_before_a_page_is_read(bounded):
    with bounded(pdf_max_pages=3) as client:
        response = upload(client, "book.pdf", make_pdf(["one", "two", "three", "four"]), "application/pdf")
        assert response.status_code == 413, response.text
        assert response.json()["detail"] == "book.pdf: the PDF has 4 pages; the limit is 3 (PDF_MAX_PAGES)"
        assert (
            upload(client, "short.pdf", make_pdf(["one", "two", "three"]), "application/pdf").status_code
            == 200
        )


def test_deeply_nested_html_stops_at_the_time_limit(bounded):
    with bounded(parse_timeout_s=1) as client:
        started = time.monotonic()
        response = upload(client, "deep.html", nested_html(60_000), "text/html")
        assert response.status_code == 413, response.text
        assert "PARSE_TIMEOUT_S" in response.json()["detail"]
        assert time.monotonic() - started < 8


def test_a_parse_past_the_memory_limit_names_it():
    paragraphs = b"<html><body>" + b"<p>x" * 2_000_000 + b"</body></html>"  # 8 MB, ~1 GB of lexbor tree
    with pytest.raises(ParseLimitExceeded, match=r"needs more than 128 MB \(PARSE_MEMORY_MB\)$"):
        parse_html_document(paragraphs, ParseLimits(memory_mb=128, timeout_s=60))


def test_the_cli_reports_a_file_past_a_limit_and_reads_the_others(tmp_path):
    from backend.ingest.loaders import load_path

    (tmp_path / "a.pdf").write_bytes(make_pdf(["one", "two"]))
    (tmp_path / "b.md").write_text("# B\n\ntext", encoding="utf-8")
    items = list(load_path(tmp_path, limits=ParseLimits(max_pdf_pages=1)))
    assert [getattr(i, "reason", None) for i in items] == [
        "a.pdf: the PDF has 2 pages; the limit is 1 (PDF_MAX_PAGES)",
        None,
    ]


def test_ordinary_files_read_the_same_through_the_sandbox():
    title, text = parse_pdf(make_pdf(["First page.", "", "Third page."], title="A Paper"), ParseLimits())
    assert (title, text) == ("A Paper", "First page.\n\nThird page.")
