"""Files per second per format: parsing in the sandbox, and the whole path to chunks (issue 29).

Usage: .venv/bin/python -m bench.formats [--repeats N]
For a mid-sized file of each format, made here (backend/testing/office_files.py; the PDF by
backend/testing/pdfs.py): the median wall time of parsing it through the sandbox (a fork, the parse,
the result back), and of the path ingestion runs before embedding (the sandboxed parse, then
chunking, jieba tokens, metadata and each chunk's provenance: load_bytes + prepare_document). Files
per second are 1000 / the median ms of one file at a time, on one core.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

from backend.config import Settings
from backend.ingest.loaders import load_bytes
from backend.ingest.prepare import prepare_document
from backend.ingest.sandbox import ParseLimits, parse_document
from backend.testing.office_files import Block, Slide, make_docx, make_epub, make_pptx, make_xlsx
from backend.testing.pdfs import text_pdf
from bench.common.report import markdown_table

LIMITS = ParseLimits()
SENTENCE = "袋鼠生活在澳大利亚南部的岛屿上，以草为食。Kangaroos graze on the southern islands. "


def _files() -> list[tuple[str, str, bytes]]:
    """(label, file name, bytes) of one file per format, each with ~60,000 characters of text."""
    blocks: list[Block] = []
    for page in range(20):
        blocks += [("Heading1", f"Part {page}"), SENTENCE * 20, ("table", [["k", "v"], ["a", SENTENCE]])]
        blocks.append(("page", ""))
    slides: list[Slide] = [
        {"title": f"Slide {n}", "body": [SENTENCE * 3] * 4, "notes": SENTENCE} for n in range(30)
    ]
    rows: list[list[object]] = [["id", "region", "text", "amount"]]
    rows += [[i, f"region {i % 7}", SENTENCE, i * 1.5] for i in range(500)]
    csv = "\n".join(",".join(str(c) for c in row) for row in rows).encode()
    chapters = [(f"Chapter {n}", SENTENCE * 30) for n in range(20)]
    pdf = text_pdf([SENTENCE.split("。")[1].strip()] * 20)  # 40 lines a page
    return [
        ("Word, 20 pages with tables", "report.docx", make_docx(blocks)),
        ("PowerPoint, 30 slides with notes", "deck.pptx", make_pptx(slides)),
        ("Excel, 500 rows x 4 columns", "sheet.xlsx", make_xlsx({"Data": rows})),
        ("CSV, 500 rows x 4 columns", "sheet.csv", csv),
        ("EPUB, 20 chapters", "book.epub", make_epub(chapters)),
        ("PDF, 20 pages", "paper.pdf", pdf),
    ]


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        walls.append((time.perf_counter() - started) * 1000)
    return statistics.median(walls)


def _to_chunks(data: bytes, name: str, settings: Settings) -> int:
    return len(prepare_document(load_bytes(data, name)[0], settings).chunks)


def _rows(repeats: int) -> list[list[str]]:
    settings = Settings(_env_file=None)
    parse_document("csv", b"a\n1\n", LIMITS)  # the forkserver starts once per process
    rows = []
    for label, name, data in _files():
        kind = name.rsplit(".", 1)[1]
        parsed = parse_document(kind, data, LIMITS)
        chunks = _to_chunks(data, name, settings)
        parse_ms = _median_ms(partial(parse_document, kind, data, LIMITS), repeats)
        path_ms = _median_ms(partial(_to_chunks, data, name, settings), repeats)
        rows.append(
            [
                label,
                f"{len(data) // 1024}",
                f"{len(parsed.text):,}",
                str(chunks),
                f"{parse_ms:.0f}",
                f"{1000 / parse_ms:.1f}",
                f"{path_ms:.0f}",
                f"{1000 / path_ms:.1f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    header = ["file", "kB", "characters", "chunks", "parse ms", "parse files/s", "to chunks ms", "files/s"]
    print(markdown_table(header, _rows(args.repeats)))


if __name__ == "__main__":
    main()
