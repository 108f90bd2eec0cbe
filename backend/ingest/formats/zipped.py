"""Office files and EPUBs are zip archives: their sizes are checked before anything is inflated.

A zip bomb (a few kB that inflate to gigabytes) is refused from its central directory alone: the sum
of the members' declared sizes must stay under PARSE_MAX_UNZIPPED_MB, and so must the declared size of
each member read. A member whose data inflates past its declared size cannot get further: zipfile
stops reading at the declared size (and then fails the CRC check); openpyxl reads through zipfile too.
"""

from __future__ import annotations

import io
import posixpath
import xml.etree.ElementTree as ET
import zipfile

from backend.errors import UnsupportedDocument
from backend.ingest.formats.builder import LimitReached
from backend.ingest.formats.xml import parse_xml

_MB = 1024 * 1024
_MAX_MEMBERS = 100_000


class Archive:
    """A checked zip archive of one kind of file ("Word document"), read member by member."""

    def __init__(self, data: bytes, *, max_unzipped_bytes: int, kind: str) -> None:
        self.kind = kind
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError) as exc:
            raise UnsupportedDocument(f"cannot read the {kind} (damaged or not one): {exc}") from None
        members = self.zip.infolist()
        if any(member.flag_bits & 0x1 for member in members):
            raise UnsupportedDocument(f"the {kind} is encrypted (a password is required)")
        total = sum(member.file_size for member in members)
        if total > max_unzipped_bytes or len(members) > _MAX_MEMBERS:
            raise LimitReached(
                f"the {kind} unpacks to {total // _MB} MB in {len(members)} parts; "
                f"the limit is {max_unzipped_bytes // _MB} MB",
                setting="PARSE_MAX_UNZIPPED_MB",
            )
        self.names = frozenset(self.zip.namelist())

    def read(self, name: str) -> bytes:
        """One member's bytes; UnsupportedDocument when it is missing or damaged."""
        try:
            return self.zip.read(name)
        except KeyError:
            raise UnsupportedDocument(f"damaged {self.kind}: {name} is missing") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
            raise UnsupportedDocument(f"damaged {self.kind}: cannot read {name}: {exc}") from None

    def xml(self, name: str) -> ET.Element:
        return parse_xml(self.read(name), what=f"{self.kind}: {name}")


def is_encrypted_office_file(data: bytes) -> bool:
    """A password-protected Office file is not a zip but an OLE compound file (EncryptedPackage)."""
    return data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def related(archive: Archive, part: str, type_suffix: str = "") -> dict[str, str]:
    """The part's relationships (from its .rels file) whose type ends with `type_suffix`: id -> member."""
    folder, base = posixpath.split(part)
    rels_name = f"{folder}/_rels/{base}.rels" if folder else f"_rels/{base}.rels"
    if rels_name not in archive.names:
        return {}
    targets: dict[str, str] = {}
    for rel in archive.xml(rels_name):
        target, ident = rel.get("Target"), rel.get("Id")
        if target is None or ident is None or rel.get("TargetMode") == "External":
            continue
        if (rel.get("Type") or "").endswith(type_suffix):
            targets[ident] = resolve(folder, target)
    return targets


def resolve(base: str, target: str) -> str:
    """A relative target ("../slides/slide1.xml") from the folder `base` ("ppt/slides") as a member name."""
    parts = [] if target.startswith("/") else [p for p in base.split("/") if p]
    for piece in target.lstrip("/").split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece and piece != ".":
            parts.append(piece)
    return "/".join(parts)
