"""Files and uploads to LoadedDocuments: Markdown, text, HTML, PDF, Word, PowerPoint, Excel, CSV/TSV,
EPUB and BEIR-style JSONL."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from backend.config import DEFAULT_METADATA_WHITELIST
from backend.errors import InvalidInput, ParseLimitExceeded, UnsupportedDocument
from backend.ingest.decoding import decode_text, is_binary
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.metadata import validate_metadata
from backend.ingest.provenance import Span
from backend.ingest.sandbox import DEFAULT_LIMITS, ParseLimits, parse_document
from backend.text.hygiene import find_unstorable, location_text, printable, unstorable_char
from backend.text.normalize import clean_document_text

_OOXML = "application/vnd.openxmlformats-officedocument."
CONTENT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".jsonl": "application/jsonl",
    ".docx": _OOXML + "wordprocessingml.document",
    ".pptx": _OOXML + "presentationml.presentation",
    ".xlsx": _OOXML + "spreadsheetml.sheet",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".epub": "application/epub+zip",
}
SUPPORTED_SUFFIXES = frozenset(CONTENT_TYPES)
# The types parsed in the sandbox (backend/ingest/sandbox.py), by the kind its parser knows them as.
_SANDBOXED = {
    "application/pdf": "pdf",
    "text/html": "html",
    CONTENT_TYPES[".docx"]: "docx",
    CONTENT_TYPES[".pptx"]: "pptx",
    CONTENT_TYPES[".xlsx"]: "xlsx",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/epub+zip": "epub",
}
# Upload content types understood when the file name has no supported suffix.
_SUFFIX_BY_TYPE = {
    **{ctype: suffix for suffix, ctype in CONTENT_TYPES.items() if suffix not in {".markdown", ".htm"}},
    "application/csv": ".csv",
    "text/x-markdown": ".md",
    "application/x-ndjson": ".jsonl",
    "application/jsonlines": ".jsonl",
}
_H1 = re.compile(r" {0,3}# +(.+?)(?: +#+)? *")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
logger = logging.getLogger(__name__)


def load_path(
    path: Path,
    *,
    metadata_whitelist: Sequence[str] = DEFAULT_METADATA_WHITELIST,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> Iterator[LoadedDocument | LoadFailure]:
    """Documents from a file or a folder (recursive, sorted, hidden entries and other suffixes skipped).

    A file past a parse limit is a LoadFailure naming the limit; the others are still read.
    """
    if path.is_dir():
        files = sorted(
            (
                p
                for p in path.rglob("*")
                if p.suffix.lower() in SUPPORTED_SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            ),
            key=lambda p: p.relative_to(path).as_posix(),
        )
        for file in files:
            yield from _load_file(file, metadata_whitelist, limits)
    elif path.is_file():
        yield from _load_file(path, metadata_whitelist, limits)
    else:
        yield LoadFailure(str(path), "no such file or folder")


def load_bytes(
    data: bytes,
    filename: str,
    content_type: str | None = None,
    *,
    metadata_whitelist: Sequence[str] = DEFAULT_METADATA_WHITELIST,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> list[LoadedDocument]:
    """Documents from an uploaded file; raises UnsupportedDocument (a bad JSONL line fails the file)
    or ParseLimitExceeded (a PDF or HTML file past a parse limit, named in the message)."""
    name = re.split(r"[\\/]", filename)[-1] or "upload"
    suffix = _suffix_for(name, content_type)
    if suffix == ".jsonl":
        rows = read_jsonl(io.BytesIO(data), source="upload", filename=name, whitelist=metadata_whitelist)
        items = list(rows)
        failures = [item.reason for item in items if isinstance(item, LoadFailure)]
        if failures:
            more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
            raise UnsupportedDocument("; ".join(failures[:5]) + more)
        return [item for item in items if isinstance(item, LoadedDocument)]
    return [_parse(data, suffix=suffix, stem=Path(name).stem, source="upload", filename=name, limits=limits)]


def _suffix_for(name: str, content_type: str | None) -> str:
    suffix = Path(name).suffix.lower()
    if suffix in SUPPORTED_SUFFIXES:
        return suffix
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime in _SUFFIX_BY_TYPE:
        return _SUFFIX_BY_TYPE[mime]
    raise UnsupportedDocument(f"unsupported type {suffix or mime or 'without a file suffix'}")


def _load_file(
    path: Path, whitelist: Sequence[str], limits: ParseLimits
) -> Iterator[LoadedDocument | LoadFailure]:
    if unstorable_char(str(path)) is not None:  # a name that is not UTF-8 decodes to lone surrogates
        yield LoadFailure(printable(str(path)), "the file name is not valid UTF-8 (rename the file)")
        return
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        yield LoadFailure(str(path), f"unsupported type {suffix or '(no suffix)'}")
        return
    try:
        if suffix == ".jsonl":
            with path.open("rb") as fh:
                yield from read_jsonl(fh, source=str(path), filename=path.name, whitelist=whitelist)
            return
        data = path.read_bytes()
    except OSError as exc:
        yield LoadFailure(str(path), f"cannot read: {exc.strerror or exc}")
        return
    try:
        yield _parse(data, suffix=suffix, stem=path.stem, source=str(path), filename=path.name, limits=limits)
    except (UnsupportedDocument, ParseLimitExceeded) as exc:
        yield LoadFailure(str(path), str(exc))


def _parse(
    data: bytes, *, suffix: str, stem: str, source: str, filename: str, limits: ParseLimits
) -> LoadedDocument:
    """One non-JSONL document; raises UnsupportedDocument with a human-readable reason, or
    ParseLimitExceeded. Every format but Markdown and text, whose parsers an input can make slow or
    large, runs in the sandbox; those parsers also say where each part of the text came from."""
    content_type = CONTENT_TYPES[suffix]
    spans: tuple[Span, ...] = ()
    if content_type in _SANDBOXED:
        try:
            parsed = parse_document(_SANDBOXED[content_type], data, limits)
        except ParseLimitExceeded as exc:
            raise ParseLimitExceeded(f"{filename}: {exc}") from None
        title, content, spans = parsed.title, parsed.text, parsed.spans
    else:
        content = clean_document_text(decode_text(data))
        title = _markdown_title(content) if content_type == "text/markdown" else None
    if not content:
        raise UnsupportedDocument("no readable text in HTML" if content_type == "text/html" else "empty file")
    return LoadedDocument(
        title=title or stem,
        content=content,
        source=source,
        filename=filename,
        content_type=content_type,
        spans=spans,
    )


def _markdown_title(text: str) -> str | None:
    """The first level-1 ATX heading outside code fences."""
    fence = ""
    for line in text.split("\n"):
        opener = _FENCE.match(line)
        if fence:
            if (
                opener
                and opener.group(1)[0] == fence[0]
                and len(opener.group(1)) >= len(fence)
                and not line[opener.end() :].strip()
            ):
                fence = ""
        elif opener:
            fence = opener.group(1)
        elif match := _H1.fullmatch(line):
            return match.group(1).strip()
    return None


def read_jsonl(
    lines: Iterable[bytes], *, source: str, filename: str, whitelist: Sequence[str]
) -> Iterator[LoadedDocument | LoadFailure]:
    """BEIR corpus rows ({"_id", "title", "text", "metadata"?}); a bad line fails alone, naming its number."""
    seen: dict[str, int] = {}
    dropped: set[str] = set()
    empty = True
    for number, raw in enumerate(lines, start=1):
        if number == 1 and is_binary(raw):
            yield LoadFailure(source, "binary file")
            return
        if not raw.strip():
            continue
        empty = False
        try:
            doc = _jsonl_row(raw, source=source, filename=filename, whitelist=whitelist, dropped=dropped)
            ident = str(doc.external_id)
            if ident in seen:
                raise UnsupportedDocument(f"duplicate _id {ident!r} (first on line {seen[ident]})")
        except (UnsupportedDocument, InvalidInput) as exc:
            yield LoadFailure(source, f"line {number}: {exc}")
            continue
        seen[ident] = number
        yield doc
    if empty:
        yield LoadFailure(source, "empty file")
    if dropped:
        logger.warning(
            "%s: metadata keys outside the whitelist dropped: %s",
            source,
            ", ".join(sorted(map(printable, dropped))),
        )


def _jsonl_row(
    raw: bytes, *, source: str, filename: str, whitelist: Sequence[str], dropped: set[str]
) -> LoadedDocument:
    try:
        row = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise UnsupportedDocument("not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise UnsupportedDocument(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(row, dict):
        raise UnsupportedDocument("expected a JSON object")
    ident = row.get("_id")
    if isinstance(ident, bool) or not isinstance(ident, str | int) or not str(ident).strip():
        raise UnsupportedDocument("missing _id (a string)")
    text, title = row.get("text"), row.get("title") or ""
    if not isinstance(text, str) or not isinstance(title, str):
        raise UnsupportedDocument("text and title must be strings")
    content = clean_document_text(text)
    if not content:
        raise UnsupportedDocument("empty text")
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise UnsupportedDocument("metadata must be a JSON object")
    # BEIR corpora carry arbitrary metadata (urls, ids): keep what the whitelist allows, drop the rest.
    dropped.update(key for key in metadata if key not in whitelist)
    wanted = {k: v for k, v in metadata.items() if k in whitelist}
    # What is kept must be storable: refused as the API refuses it, never silently altered.
    problem = find_unstorable({"_id": ident, "title": title, "text": text, "metadata": wanted})
    if problem is not None:
        raise UnsupportedDocument(f"{location_text(problem.location)}: {problem.message}")
    kept = validate_metadata(wanted, whitelist)
    # No title stays empty: an id such as "TRIAL_800" would only add noise to the embedded text.
    return LoadedDocument(
        title=clean_document_text(title),
        content=content,
        source=source,
        filename=filename,
        content_type="text/plain",
        external_id=str(ident).strip(),
        metadata=kept,
    )


def as_version_of(documents: list[LoadedDocument], external_id: str | None) -> list[LoadedDocument]:
    """An uploaded file's documents under `external_id` (a new version of that document, updated in place
    instead of stored anew under its content's hash); None leaves them as read. UnsupportedDocument
    when the file holds other than one document (an id names one)."""
    if external_id is None:
        return documents
    if len(documents) != 1:
        raise UnsupportedDocument(
            f"external_id names one document, and this file holds {len(documents)}: upload it without one"
        )
    documents[0].external_id = external_id
    return documents
