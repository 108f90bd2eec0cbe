"""EPUB to Markdown: the chapters of its spine in reading order, each read as HTML (headings as '#'
lines, as for an uploaded HTML file) and each a "chapter" span, so a citation says "ch. 3: Title"."""

from __future__ import annotations

import posixpath

from backend.ingest.decoding import decode_text
from backend.ingest.formats.builder import Parsed, TextBuilder
from backend.ingest.formats.zipped import Archive, resolve
from backend.ingest.html_text import html_to_text

_CONTAINER = "META-INF/container.xml"
_CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"
OPF = "{http://www.idpf.org/2007/opf}"
DC = "{http://purl.org/dc/elements/1.1/}"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def epub_text(data: bytes, *, max_chars: int, max_unzipped_bytes: int) -> Parsed:
    """A book's title and Markdown text, with its chapters as spans."""
    archive = Archive(data, max_unzipped_bytes=max_unzipped_bytes, kind="EPUB book")
    package_name = _package_name(archive)
    package = archive.xml(package_name)
    folder = posixpath.dirname(package_name)
    manifest = {
        item.get("id"): (resolve(folder, item.get("href") or ""), item.get("media-type"))
        for item in package.iter(f"{OPF}item")
    }
    out = TextBuilder(max_chars=max_chars, what="the book")
    chapter = 0
    for ref in package.iter(f"{OPF}itemref"):
        name, media_type = manifest.get(ref.get("idref"), ("", None))
        if media_type not in _HTML_TYPES or name not in archive.names:
            continue
        page_title, text = html_to_text(decode_text(archive.read(name)))
        if not text.strip():
            continue
        chapter += 1
        first_line = text.lstrip().split("\n", 1)[0]
        with out.place("chapter", chapter, f"by chapter {chapter}"):
            if page_title and not first_line.startswith("#"):  # a chapter without a heading: its title
                out.heading(1, page_title)
            out.block(text)
    return out.parsed(package.findtext(f"{OPF}metadata/{DC}title"))


def _package_name(archive: Archive) -> str:
    """The package document (.opf) that META-INF/container.xml names."""
    rootfile = archive.xml(_CONTAINER).find(f"{_CONTAINER_NS}rootfiles/{_CONTAINER_NS}rootfile")
    name = resolve("", rootfile.get("full-path") or "") if rootfile is not None else ""
    if name not in archive.names:
        archive.read(name or "the package document (.opf)")  # raises: damaged, naming what is missing
    return name
