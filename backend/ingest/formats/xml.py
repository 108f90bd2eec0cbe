"""XML of untrusted files, parsed by expat with every DTD refused.

Office files and EPUBs never need a document type declaration; refusing one refuses entity
definitions with it, so neither an entity expansion ("billion laughs") nor an external entity (a
local file, a URL) can be read. This is what defusedxml does, without the dependency. Elements come
out as ElementTree elements with "{namespace}name" tags.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NoReturn
from xml.parsers import expat

from backend.errors import UnsupportedDocument


def parse_xml(data: bytes, *, what: str) -> ET.Element:
    """The root element of `data`; UnsupportedDocument for malformed XML or any DTD."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")

    def refuse(*_: object) -> NoReturn:
        raise UnsupportedDocument(f"{what}: a document type declaration is not allowed")

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = lambda name, attrs: builder.start(
        _tag(name), {_tag(k): v for k, v in attrs.items()}
    )
    parser.EndElementHandler = lambda name: builder.end(_tag(name))
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
        return builder.close()
    except (expat.ExpatError, AssertionError) as exc:  # TreeBuilder asserts on an unclosed tree
        raise UnsupportedDocument(f"{what}: malformed XML ({exc})") from None


def _tag(name: str) -> str:
    return "{" + name if "}" in name else name


def local(tag: str) -> str:
    """An element's name without its namespace: "{ns}p" -> "p"."""
    return tag.rpartition("}")[2]
