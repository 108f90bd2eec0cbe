"""Word, PowerPoint, Excel, CSV and EPUB files (issue 29): read with their structure (headings, tables,
lists, notes), each part of the text placed (page, slide, sheet and row, chapter), and hostile or broken
files refused with a reason, inside the parse sandbox. The files are made in the test
(backend/testing/office_files.py)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from backend.config import Settings
from backend.errors import ParseLimitExceeded, UnsupportedDocument
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_bytes, load_path
from backend.ingest.prepare import prepare_document
from backend.ingest.sandbox import ParseLimits, parse_document
from backend.testing.office_files import make_docx, make_epub, make_pptx, make_xlsx, zipped

LIMITS = ParseLimits()


def placed(parsed, kind):
    """{number: text} of the spans of one kind."""
    return {s.number: parsed.text[s.start : s.end] for s in parsed.spans if s.kind == kind}


def chunks_of(data: bytes, name: str, **settings):
    [doc] = load_bytes(data, name)
    prepared = prepare_document(doc, Settings(_env_file=None, **settings))
    return [(c.chunk, c.metadata["provenance"]) for c in prepared.chunks]


def test_word_headings_tables_lists_and_pages():
    data = make_docx(
        [
            ("Title", "Annual Report"),
            ("Heading1", "Summary"),
            "Revenue grew.",
            ("page", ""),
            ("Heading2", "Figures"),
            ("table", [["Region", "Amount"], ["North | East", "3"]]),
            ("ListParagraph", "hire two people"),
            ("page", ""),
            "Closing words.",
        ],
        title="Report 2026",
    )
    parsed = parse_document("docx", data, LIMITS)
    assert parsed.title == "Report 2026"
    assert parsed.text == (
        "# Annual Report\n\n# Summary\n\nRevenue grew.\n\n## Figures\n\n"
        "| Region | Amount |\n| --- | --- |\n| North \\| East | 3 |\n\n- hire two people\n\nClosing words."
    )
    pages = placed(parsed, "page")
    assert pages[1].endswith("Revenue grew.")
    assert pages[2].startswith("## Figures")
    assert pages[2].endswith("- hire two people")
    assert pages[3] == "Closing words."


def test_word_pages_follow_the_breaks_of_its_last_layout():
    data = make_docx(["First page text.", ("page", ""), "Second page text."], rendered_breaks=True)
    parsed = parse_document("docx", data, LIMITS)
    assert placed(parsed, "page") == {1: "First page text.", 2: "Second page text."}
    assert parse_document("docx", make_docx(["One page only."]), LIMITS).spans == ()


def test_slides_in_order_with_titles_bullets_tables_and_notes():
    data = make_pptx(
        [
            {"title": "Welcome", "body": ["Point A", "Point B"], "notes": "Say hello first."},
            {"title": "Numbers", "table": [["Quarter", "Sales"], ["Q1", "10"]]},
            {"body": ["An untitled slide"]},
        ]
    )
    parsed = parse_document("pptx", data, LIMITS)
    assert parsed.title == "Welcome"
    assert placed(parsed, "slide") == {
        1: "# Welcome\n\n- Point A\n- Point B\n\nNotes: Say hello first.",
        2: "# Numbers\n\n| Quarter | Sales |\n| --- | --- |\n| Q1 | 10 |",
        3: "# Slide 3\n\n- An untitled slide",
    }


def test_sheets_are_tables_headed_by_their_names_with_their_row_numbers():
    data = make_xlsx(
        {"Sales": [["Region", "Amount"], ["North", 3.0], [None, None], ["South", 4.5]], "Notes": [["x"]]},
        title="Budget",
    )
    parsed = parse_document("xlsx", data, LIMITS)
    assert parsed.title == "Budget"
    assert placed(parsed, "sheet") == {
        1: "# Sales\n\n| Region | Amount |\n| --- | --- |\n| North | 3 |\n| South | 4.5 |",
        2: "# Notes\n\n| x |\n| --- |",
    }
    rows = [(s.number, parsed.text[s.start : s.end]) for s in parsed.spans if s.kind == "row"]
    assert rows == [(1, "| Region | Amount |"), (2, "| North | 3 |"), (4, "| South | 4.5 |"), (1, "| x |")]


@pytest.mark.parametrize(
    ("kind", "data"),
    [("csv", b"name;value\nalpha;1\n\nbeta;2\n"), ("tsv", b"name\tvalue\nalpha\t1\n\nbeta\t2\n")],
)
def test_csv_and_tsv_are_one_table_with_line_numbers(kind, data):
    parsed = parse_document(kind, data, LIMITS)
    assert parsed.text == "| name | value |\n| --- | --- |\n| alpha | 1 |\n| beta | 2 |"
    assert [(s.number, s.kind) for s in parsed.spans] == [(1, "row"), (2, "row"), (4, "row")]


def test_epub_chapters_in_reading_order():
    parsed = parse_document(
        "epub", make_epub([("Chapter One", "Once upon a time."), ("Two", "The end.")]), LIMITS
    )
    assert parsed.title == "A Book"
    assert placed(parsed, "chapter") == {1: "# Chapter One\n\nOnce upon a time.", 2: "# Two\n\nThe end."}


def test_a_long_sheet_is_cut_between_rows_and_every_chunk_names_its_rows_and_repeats_the_header():
    rows: list[list[object]] = [
        ["ID", "Item"],
        *([i, f"item number {i} with a longer description"] for i in range(1, 120)),
    ]
    chunks = chunks_of(make_xlsx({"Stock": rows}), "stock.xlsx")
    assert len(chunks) > 3
    previous_end = 0
    for chunk, provenance in chunks:
        assert chunk.heading_path == ("Stock",)
        lines = chunk.content.removeprefix("# Stock\n\n").split("\n")
        assert lines[:2] == ["| ID | Item |", "| --- | --- |"]
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines)  # whole rows only
        first, last = int(lines[2].split()[1]) + 1, int(lines[-1].split()[1]) + 1  # item i is row i + 1
        assert (provenance["row_start"], provenance["row_end"]) == (1 if previous_end == 0 else first, last)
        assert provenance["sheet_start"] == provenance["sheet_end"] == 1
        previous_end = last
    assert previous_end == 120


def test_chunk_offsets_point_into_the_documents_text():
    data = make_docx([("Heading1", "A"), "alpha " * 120, ("page", ""), ("Heading1", "B"), "beta " * 120])
    [doc] = load_bytes(data, "r.docx")
    prepared = prepare_document(doc, Settings(_env_file=None))
    for c in prepared.chunks:
        provenance = c.metadata["provenance"]
        assert c.chunk.content.endswith(doc.content[provenance["char_start"] : provenance["char_end"]])
    pages = [
        (c.metadata["provenance"]["page_start"], c.metadata["provenance"]["page_end"])
        for c in prepared.chunks
    ]
    assert pages[0] == (1, 1)
    assert pages[-1] == (2, 2)


# --- hostile and broken files ----------------------------------------------------------------------


def test_a_zip_bomb_is_refused_by_its_declared_size_before_it_is_unpacked():
    bomb = zipped({"[Content_Types].xml": "<Types/>", "word/document.xml": b"\0" * (3 * 1024 * 1024)})
    assert len(bomb) < 10_000
    with pytest.raises(
        ParseLimitExceeded, match=r"unpacks to 3 MB .*limit is 2 MB \(PARSE_MAX_UNZIPPED_MB\)"
    ):
        parse_document("docx", bomb, ParseLimits(max_unzipped_mb=2))


def test_an_entity_expansion_is_refused():
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p>'
        "<w:r><w:t>&b;</w:t></w:r></w:p></w:body></w:document>"
    )
    data = zipped({"word/document.xml": laughs})
    with pytest.raises(UnsupportedDocument, match="document type declaration is not allowed"):
        parse_document("docx", data, LIMITS)


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        ("docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, "password-protected"),
        ("xlsx", b"not a zip at all", "cannot read the Excel workbook"),
        ("pptx", zipped({"docProps/core.xml": "<x/>"}), "ppt/presentation.xml is missing"),
        ("docx", zipped({"word/document.xml": "<w:document><unclosed>"}), "malformed XML"),
        ("epub", zipped({"mimetype": "application/epub+zip"}), "META-INF/container.xml is missing"),
    ],
)
def test_broken_or_protected_files_are_refused_with_a_reason(kind, data, message):
    with pytest.raises(UnsupportedDocument, match=message):
        parse_document(kind, data, LIMITS)


def test_an_encrypted_zip_member_is_refused():
    data = bytearray(zipped({"word/document.xml": "<x/>"}))
    # set the "encrypted" flag in both the local header and the central directory entry
    for header in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.index(header) + (6 if header == b"PK\x03\x04" else 8)
        data[at] |= 1
    with pytest.raises(UnsupportedDocument, match="encrypted"):
        parse_document("docx", bytes(data), LIMITS)
    assert zipfile.is_zipfile(io.BytesIO(bytes(data)))  # a zip still: refused for its flag


def test_text_past_max_document_chars_stops_the_parse():
    rows: list[list[object]] = [["n", "text"], *([i, "x" * 100] for i in range(1, 500))]
    with pytest.raises(ParseLimitExceeded, match=r"the workbook's text passes 5000 characters by row \d+"):
        parse_document("xlsx", make_xlsx({"Big": rows}), ParseLimits(max_chars=5000))


def test_a_folder_of_office_files_is_read_by_the_cli_path(tmp_path):
    (tmp_path / "deck.pptx").write_bytes(make_pptx([{"title": "Hello", "body": ["world"]}]))
    (tmp_path / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "broken.xlsx").write_bytes(b"PK\x03\x04")
    items = {Path(i.source).name: i for i in load_path(tmp_path)}
    deck, table, broken = items["deck.pptx"], items["table.csv"], items["broken.xlsx"]
    assert isinstance(deck, LoadedDocument)
    assert deck.content == "# Hello\n\n- world"
    assert [s.kind for s in deck.spans] == ["slide"]
    assert isinstance(table, LoadedDocument)
    assert table.content_type == "text/csv"
    assert isinstance(broken, LoadFailure)
    assert broken.reason.startswith("cannot read the Excel workbook")


def test_a_table_inside_a_table_cell_is_that_cells_text():
    inner = "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>inner</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    cell = "<w:tc><w:p><w:r><w:t>{}</w:t></w:r></w:p>{}</w:tc>"
    rows = f"<w:tr>{cell.format('h1', '')}{cell.format('h2', '')}</w:tr>"
    rows += f"<w:tr>{cell.format('a', inner)}{cell.format('b', '')}</w:tr>"
    body = f"<w:tbl>{rows}</w:tbl>"
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    data = zipped({"word/document.xml": f'<w:document xmlns:w="{ns}"><w:body>{body}</w:body></w:document>'})
    assert parse_document("docx", data, LIMITS).text == "| h1 | h2 |\n| --- | --- |\n| a inner | b |"
