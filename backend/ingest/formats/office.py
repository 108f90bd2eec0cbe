"""What Word, PowerPoint and Excel packages share: the main part named by the package's relationships,
and the title in the document properties."""

from __future__ import annotations

from backend.errors import UnsupportedDocument
from backend.ingest.formats.builder import one_line
from backend.ingest.formats.zipped import Archive, resolve

_CORE = "docProps/core.xml"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def main_part(archive: Archive, *, default: str) -> str:
    """The member the package's root relationship calls its office document (else `default`)."""
    if "_rels/.rels" in archive.names:
        for rel in archive.xml("_rels/.rels"):
            target = rel.get("Target")
            if target and (rel.get("Type") or "").endswith("/officeDocument"):
                name = resolve("", target)
                if name in archive.names:
                    return name
    if default not in archive.names:
        raise UnsupportedDocument(f"damaged {archive.kind}: {default} is missing")
    return default


def core_title(archive: Archive) -> str | None:
    """The title in docProps/core.xml, when there is one."""
    if _CORE not in archive.names:
        return None
    title = archive.xml(_CORE).findtext(_DC_TITLE)
    return (one_line(title) or None) if title else None
