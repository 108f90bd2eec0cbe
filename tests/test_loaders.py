"""Loaders: encodings, failures that do not stop a batch, HTML, PDF and BEIR JSONL; uploads."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from backend.errors import UnsupportedDocument
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_bytes, load_path


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A minimal PDF with one line of Helvetica text per page (an empty string: a page without text)."""
    page_ids = [4 + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    bodies = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for page_id, text in zip(page_ids, pages, strict=True):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode() if text else b""
        bodies.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        bodies.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    info = ""
    if title:
        bodies.append(f"<< /Title ({title}) >>".encode())
        info = f" /Info {len(bodies)} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += f"trailer\n<< /Size {len(bodies) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def encrypt(pdf: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def load_one(path: Path) -> LoadedDocument | LoadFailure:
    items = list(load_path(path))
    assert len(items) == 1
    return items[0]


def load_doc(path: Path) -> LoadedDocument:
    item = load_one(path)
    assert isinstance(item, LoadedDocument), item
    return item


def load_failure(path: Path) -> LoadFailure:
    item = load_one(path)
    assert isinstance(item, LoadFailure), item
    return item


def docs_in(path: Path) -> list[LoadedDocument]:
    items = list(load_path(path))
    assert all(isinstance(item, LoadedDocument) for item in items), items
    return [item for item in items if isinstance(item, LoadedDocument)]


# --- text and markdown -----------------------------------------------------------------------------


def test_markdown_title_is_the_first_h1_outside_code(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(
        "```sh\n# a shell comment\n```\n\n## Intro\n\n# 安装指南 #\n\n正文。\r\n", encoding="utf-8"
    )
    doc = load_doc(path)
    assert doc == LoadedDocument(
        title="安装指南",
        content="```sh\n# a shell comment\n```\n\n## Intro\n\n# 安装指南 #\n\n正文。",
        source=str(path),
        filename="guide.md",
        content_type="text/markdown",
    )


def test_title_falls_back_to_the_file_stem(tmp_path):
    (tmp_path / "notes.txt").write_text("# looks like a heading\nplain text", encoding="utf-8")
    (tmp_path / "readme.markdown").write_text("#hashtag is no heading", encoding="utf-8")
    txt, md = docs_in(tmp_path)
    assert (md.title, md.content_type) == ("readme", "text/markdown")
    assert (txt.title, txt.content_type) == ("notes", "text/plain")


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("# 安装指南\n\n本文介绍如何安装软件。请先下载安装包，然后运行。", "gb18030"),
        ("# 安裝指南\n\n本文介紹如何安裝軟體。請先下載安裝包，然後執行。", "big5"),
        ("中文", "gb18030"),  # charset detection alone reads these four bytes as Big5
        ("繁體", "big5"),
        ("UTF-8 with a BOM：中文", "utf-8-sig"),
        ("UTF-16 with a BOM：中文", "utf-16"),
        ("Café au lait, naïve résumé.", "cp1252"),
    ],
)
def test_legacy_encodings_decode(tmp_path, text, encoding):
    path = tmp_path / "doc.md"
    path.write_bytes(text.encode(encoding))
    assert load_doc(path).content == text


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (b"  \n\t\r\n  ", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        (bytes(range(1, 32)) * 20, "binary file"),
        (
            bytes(range(0x80, 0x100)) * 4,
            "cannot decode as text (tried utf-8, gb18030, big5 and charset detection)",
        ),
    ],
)
def test_unreadable_text_files_fail_with_a_reason(tmp_path, data, reason):
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    assert load_one(path) == LoadFailure(str(path), reason)


def test_a_folder_batch_goes_on_past_failures(tmp_path):
    (tmp_path / "b.md").write_text("# B\n\nbody", encoding="utf-8")
    (tmp_path / "a.txt").write_bytes(b"\x00\x01binary")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.html").write_text("<h1>C</h1><p>text</p>", encoding="utf-8")
    (tmp_path / "sub" / "empty.md").write_text("   ", encoding="utf-8")
    (tmp_path / "skipped.odt").write_bytes(b"PK\x03\x04")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hidden.md").write_text("# hidden", encoding="utf-8")
    items = list(load_path(tmp_path))
    assert [(type(i).__name__, Path(i.source).name) for i in items] == [
        ("LoadFailure", "a.txt"),
        ("LoadedDocument", "b.md"),
        ("LoadedDocument", "c.html"),
        ("LoadFailure", "empty.md"),
    ]
    assert [i.reason for i in items if isinstance(i, LoadFailure)] == ["binary file", "empty file"]


def test_single_unsupported_or_missing_path_fails(tmp_path):
    odt = tmp_path / "report.odt"
    odt.write_bytes(b"PK\x03\x04")
    assert load_one(odt) == LoadFailure(str(odt), "unsupported type .odt")
    assert load_failure(tmp_path / "missing.md").reason == "no such file or folder"


# --- HTML ------------------------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><title>  发布 说明 </title><style>p { color: red }</style>
<script>var secret = 1;</script></head><body><nav><a href="/">首页</a> | <a href="/x">菜单</a></nav>
<h1>版本 2.0</h1><p>新增 <b>混合检索</b>&amp;重排。</p><p>Second&nbsp;paragraph.<br>New line.</p>
<noscript>enable JS</noscript><h3>细节</h3><ul><li>一</li><li>二</li></ul>
<pre>def f():
    return 1</pre></body></html>"""


def test_html_becomes_readable_text_with_markdown_headings(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = load_doc(path)
    assert (doc.title, doc.content_type) == ("发布 说明", "text/html")
    assert doc.content == (
        "# 版本 2.0\n\n新增 混合检索&重排。\n\nSecond paragraph.\nNew line.\n\n"
        "### 细节\n\n- 一\n- 二\n\n```\ndef f():\n    return 1\n```"
    )


def test_html_title_falls_back_to_h1_then_stem(tmp_path):
    (tmp_path / "a.htm").write_text("<h1>Heading One</h1><p>x</p>", encoding="utf-8")
    (tmp_path / "b.html").write_text("<p>no title</p>", encoding="utf-8")
    (tmp_path / "c.html").write_text("<script>only()</script><nav>menu</nav>", encoding="utf-8")
    a, b, c = load_path(tmp_path)
    assert isinstance(a, LoadedDocument)
    assert isinstance(b, LoadedDocument)
    assert (a.title, b.title) == ("Heading One", "b")
    assert c == LoadFailure(str(tmp_path / "c.html"), "no readable text in HTML")


# --- PDF -------------------------------------------------------------------------------------------


def test_pdf_pages_are_joined_by_blank_lines(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(["First page text.", "", "Third page text."], title="A Paper"))
    doc = load_doc(path)
    assert (doc.title, doc.content, doc.content_type) == (
        "A Paper",
        "First page text.\n\nThird page text.",
        "application/pdf",
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (make_pdf(["", ""]), "PDF has no extractable text (scanned or image-only; OCR is not supported)"),
        (encrypt(make_pdf(["secret"]), "pw"), "encrypted PDF (a password is required)"),
        (b"%PDF-1.4\nthis is not a pdf", "cannot read PDF (damaged or not a PDF)"),
    ],
)
def test_unreadable_pdfs_fail_with_a_reason(tmp_path, data, reason):
    path = tmp_path / "x.pdf"
    path.write_bytes(data)
    assert load_failure(path).reason.startswith(reason)


def test_pdf_encrypted_with_an_empty_user_password_is_read(tmp_path):
    path = tmp_path / "open.pdf"
    path.write_bytes(encrypt(make_pdf(["Readable anyway."]), ""))
    assert (load_doc(path).content, load_doc(path).title) == ("Readable anyway.", "open")


# --- BEIR JSONL ------------------------------------------------------------------------------------


def _jsonl(rows: list) -> bytes:
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r, ensure_ascii=False).encode() for r in rows)


def test_jsonl_rows_become_documents_and_bad_lines_fail_alone(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(
        _jsonl(
            [
                {"_id": "d1", "title": "泡泡战士", "text": "基于跑跑卡丁车开发的游戏。"},
                b"{not json",
                {"title": "no id", "text": "x"},
                b"",
                {"_id": 7, "text": "  ", "title": "blank"},
                ["not", "an", "object"],
                {"_id": "d1", "text": "again"},
                {"_id": "d2", "text": "Second.", "metadata": {"tags": ["a"], "url": "http://x"}},
                {"_id": "d3", "text": "Third.", "metadata": {"tags": "a"}},
            ]
        )
    )
    items = list(load_path(path))
    docs = [i for i in items if isinstance(i, LoadedDocument)]
    assert [(d.external_id, d.title, d.content, d.metadata) for d in docs] == [
        ("d1", "泡泡战士", "基于跑跑卡丁车开发的游戏。", {}),
        ("d2", "", "Second.", {"tags": ["a"]}),  # keys outside the whitelist are dropped
    ]
    assert {(d.source, d.filename, d.content_type) for d in docs} == {
        (str(path), "corpus.jsonl", "text/plain"),
    }
    reasons = [i.reason for i in items if isinstance(i, LoadFailure)]
    assert [r.split(":")[0] for r in reasons] == ["line 2", "line 3", "line 5", "line 6", "line 7", "line 9"]
    assert reasons[0].startswith("line 2: invalid JSON")
    assert reasons[4] == "line 7: duplicate _id 'd1' (first on line 1)"
    assert "tags must be a list of strings" in reasons[5]


def test_binary_or_empty_jsonl_fails_once(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "b.jsonl").write_bytes(b"\n\n")
    assert list(load_path(tmp_path)) == [
        LoadFailure(str(tmp_path / "a.jsonl"), "binary file"),
        LoadFailure(str(tmp_path / "b.jsonl"), "empty file"),
    ]


# --- uploads ---------------------------------------------------------------------------------------


def test_load_bytes_reads_an_upload():
    data = "# 标题\n\n内容。".encode("gb18030")
    [doc] = load_bytes(data, "C:\\Users\\me\\说明.md", "application/octet-stream")
    assert (doc.title, doc.content, doc.source, doc.filename, doc.external_id) == (
        "标题",
        "# 标题\n\n内容。",
        "upload",
        "说明.md",
        None,
    )


def test_load_bytes_uses_the_content_type_when_the_name_has_no_suffix():
    [doc] = load_bytes(b"<title>T</title><p>x</p>", "page", "text/html; charset=utf-8")
    assert (doc.title, doc.content_type, doc.content) == ("T", "text/html", "x")
    [pdf] = load_bytes(make_pdf(["Hello."]), "scan", "application/pdf")
    assert pdf.content == "Hello."


def test_load_bytes_jsonl_is_all_or_nothing():
    docs = load_bytes(_jsonl([{"_id": "1", "text": "a"}, {"_id": "2", "text": "b"}]), "c.jsonl")
    assert [d.external_id for d in docs] == ["1", "2"]
    with pytest.raises(UnsupportedDocument, match=r"^line 2: invalid JSON"):
        load_bytes(_jsonl([{"_id": "1", "text": "a"}, b"{"]), "c.jsonl")


@pytest.mark.parametrize(
    ("data", "name", "ctype", "message"),
    [
        (b"PK\x03\x04", "report.odt", None, "unsupported type .odt"),
        (b"PK\x03\x04", "report.docx", None, "cannot read the Word document \\(damaged"),
        (b"data", "blob", "application/octet-stream", "unsupported type application/octet-stream"),
        (b"\x00\x00\x00", "a.txt", "text/plain", "binary file"),
        (b"", "a.md", None, "empty file"),
    ],
)
def test_load_bytes_rejects_what_it_cannot_read(data, name, ctype, message):
    with pytest.raises(UnsupportedDocument, match=f"^{message}"):
        load_bytes(data, name, ctype)


# --- text that cannot be stored: NUL, unpaired surrogates (issue 24) -------------------------------


def test_a_nul_anywhere_in_a_text_file_refuses_the_file(tmp_path):
    """As the API refuses a NUL in a field. A NUL past the first 8 KB was silently dropped before."""
    late = tmp_path / "late.txt"
    late.write_bytes(b"log line\n" * 1000 + b"\x00tail")
    assert (
        load_failure(late).reason == "binary file (a NUL character at character 9000; text cannot hold one)"
    )
    utf16 = tmp_path / "wide.md"  # decoded from UTF-16: the NUL is a character of the text
    utf16.write_bytes("# T\n\nhello\x00world".encode("utf-16"))
    assert load_failure(utf16).reason.startswith("binary file (a NUL character")
    with pytest.raises(UnsupportedDocument, match=r"^binary file \(a NUL"):
        load_bytes(b"x" * 9000 + b"\x00", "a.md", None)


def test_jsonl_lines_with_unstorable_text_fail_alone_naming_the_field(tmp_path):
    """Each was stored with the NUL dropped, or failed at the database write (a lone surrogate)."""
    path = tmp_path / "corpus.jsonl"
    rows = [
        b'{"_id": "ok", "text": "fine"}',
        b'{"_id": "nul", "text": "a \\u0000 b"}',
        b'{"_id": "s", "title": "t\\udc00", "text": "x"}',
        b'{"_id": "m", "text": "x", "metadata": {"tags": ["\\ud800"], "url": "\\u0000 (dropped)"}}',
        b'{"_id": "emoji", "text": "\\ud83d\\ude00 is a pair"}',
    ]
    path.write_bytes(b"\n".join(rows))
    items = list(load_path(path))
    assert [i.external_id for i in items if isinstance(i, LoadedDocument)] == ["ok", "emoji"]
    assert [i.reason for i in items if isinstance(i, LoadFailure)] == [
        "line 2: text: contains a NUL character (U+0000), which text cannot hold; remove it",
        "line 3: title: contains an unpaired surrogate (U+DC00), which is not a character; "
        "send text as valid UTF-8 (or UTF-16 pairs in JSON \\u escapes)",
        "line 4: metadata.tags[0]: contains an unpaired surrogate (U+D800), which is not a character; "
        "send text as valid UTF-8 (or UTF-16 pairs in JSON \\u escapes)",
    ]


def test_a_file_name_that_is_not_utf8_is_a_failure_not_a_crash(tmp_path):
    """Python decodes such a name with lone surrogates, which no database write can encode."""
    (tmp_path / "good.txt").write_text("fine", encoding="utf-8")
    bad = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xffname.txt"))
    bad.write_bytes(b"some text")
    items = list(load_path(tmp_path))
    assert [type(i).__name__ for i in items] == ["LoadFailure", "LoadedDocument"]
    assert items[0] == LoadFailure(
        f"{tmp_path}/bad\\udcffname.txt", "the file name is not valid UTF-8 (rename the file)"
    )


def test_pdf_text_drops_what_cannot_be_stored():
    """Extracted text is not the user's to fix: a NUL or a lone surrogate of a text layer is dropped."""
    from backend.text import clean_document_text

    assert clean_document_text("页\x00面\ud800文字") == "页面文字"
