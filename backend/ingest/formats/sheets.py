"""Spreadsheets to Markdown tables: Excel (.xlsx) with openpyxl, CSV and TSV with the csv module.

Each sheet is a '#' section named after it, holding one Markdown table: its first non-empty row is the
header, empty rows are left out, and every row keeps its number as the spreadsheet shows it, so a
citation says "Sheet1, rows 10–20". Cells show the values Excel last computed (formulas are not
evaluated) and the rows are read as they stream, stopping once the text would pass MAX_DOCUMENT_CHARS.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from datetime import date, datetime, time
from typing import Any

import openpyxl

from backend.errors import UnsupportedDocument
from backend.ingest.decoding import decode_text
from backend.ingest.formats.builder import Parsed, TextBuilder
from backend.ingest.formats.zipped import Archive

Row = tuple[int, list[str]]
_SNIFF_CHARS = 64 * 1024


def xlsx_text(data: bytes, *, max_chars: int, max_unzipped_bytes: int) -> Parsed:
    """A workbook's title and one Markdown table per sheet, with sheets and rows as spans."""
    Archive(data, max_unzipped_bytes=max_unzipped_bytes, kind="Excel workbook")  # refuses a zip bomb
    book = _open(data)
    out = TextBuilder(max_chars=max_chars, what="the workbook")
    try:
        for number, sheet in enumerate(book.worksheets, start=1):
            sheet.reset_dimensions()  # the declared size can claim a million empty rows and columns
            values = enumerate(sheet.iter_rows(values_only=True), start=1)
            rows = ((n, [_cell(v) for v in cells]) for n, cells in values)
            with out.place("sheet", number, where=f"in sheet {sheet.title!r}"):
                out.heading(1, sheet.title)
                _table(out, rows)
        title = book.properties.title
    finally:
        book.close()
    return out.parsed(title)


def csv_text(data: bytes, *, max_chars: int, tab_separated: bool = False) -> Parsed:
    """A CSV (or TSV) file as one Markdown table, with its records as row spans (the header is row 1)."""
    text = decode_text(data)
    dialect = _dialect(text[:_SNIFF_CHARS], tab_separated)
    out = TextBuilder(max_chars=max_chars, what="the CSV file")
    try:
        records = enumerate(csv.reader(io.StringIO(text, newline=""), dialect), start=1)
        _table(out, ((n, list(values)) for n, values in records))
    except csv.Error as exc:
        raise UnsupportedDocument(f"cannot read the CSV file: {exc}") from exc
    return out.parsed(None)


def _open(data: bytes) -> Any:
    try:
        return openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except MemoryError:
        raise
    except Exception as exc:  # openpyxl raises KeyError, InvalidFileException, lxml errors ...
        raise UnsupportedDocument(f"cannot read the Excel workbook (damaged or not a .xlsx): {exc}") from exc


def _dialect(sample: str, tab_separated: bool) -> type[csv.Dialect] | csv.Dialect:
    if tab_separated:
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def _table(out: TextBuilder, rows: Iterable[Row]) -> None:
    """The non-empty rows as one table (the first is the header); stops as soon as the table would
    take the text past the builder's limit."""
    kept = _non_empty(rows)
    first = next(kept, None)
    if first is None:
        return
    body: list[Row] = []
    pending = out.length + sum(len(c) + 3 for c in first[1]) * 2
    for row in kept:
        body.append(row)
        pending += sum(len(c) + 3 for c in row[1]) + 2
        if pending > out.max_chars:
            out.refuse(f"by row {row[0]}")
    out.table(first, body)


def _non_empty(rows: Iterable[Row]) -> Iterator[Row]:
    for number, cells in rows:
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield number, cells


def _cell(value: Any) -> str:
    """A cell as Excel would show it, roughly: 3 not 3.0, dates without a midnight time (the builder
    escapes it for the table)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    return str(value)
