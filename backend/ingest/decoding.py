"""Bytes to text: BOMs, UTF-8, then Chinese legacy encodings (GB18030, Big5), then charset detection."""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes

from backend.errors import UnsupportedDocument

_BOMS = (  # UTF-32 first: its little-endian BOM starts with the UTF-16 one.
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SAMPLE_BYTES = 8192
_MAX_CONTROL_RATIO = 0.1
_CONTROL_BYTES = frozenset(range(0x00, 0x09)) | frozenset(range(0x0E, 0x20)) | {0x7F}
# A decoding is taken as Chinese when this share of its non-ASCII characters is common text.
_MIN_COMMON_SHARE = 0.9


def is_binary(data: bytes) -> bool:
    """True for data that is not text: a NUL byte or many control bytes near the start."""
    sample = data[:_SAMPLE_BYTES]
    if not sample or sample.startswith(tuple(bom for bom, _ in _BOMS)):
        return False
    if b"\x00" in sample:
        return True
    return sum(byte in _CONTROL_BYTES for byte in sample) / len(sample) > _MAX_CONTROL_RATIO


def decode_text(data: bytes) -> str:
    """Decode a text file; raise UnsupportedDocument for empty, binary or undecodable data."""
    text = _decode(data)
    # A NUL anywhere (not only near the start, where is_binary looks) means this is not a text file;
    # PostgreSQL could not store it either. Refused like the API refuses it, never silently dropped.
    nul = text.find("\x00")
    if nul >= 0:
        raise UnsupportedDocument(f"binary file (a NUL character at character {nul}; text cannot hold one)")
    return text


def _decode(data: bytes) -> str:
    if not data.strip():
        raise UnsupportedDocument("empty file")
    if is_binary(data):
        raise UnsupportedDocument("binary file")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                break
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = _decode_chinese(data)
    if text is not None:
        return text
    # charset-normalizer alone picks Big5 or Korean for short GB18030 text, hence the Chinese check first.
    results = from_bytes(data)
    best = results.best()
    if best is not None:
        # Short Western text ties between code pages; Windows-1252 is by far the likeliest of them.
        ties = [r for r in results if (r.chaos, r.coherence) == (best.chaos, best.coherence)]
        return str(next((r for r in ties if r.encoding == "cp1252"), best))
    raise UnsupportedDocument("cannot decode as text (tried utf-8, gb18030, big5 and charset detection)")


def _decode_chinese(data: bytes) -> str | None:
    """The GB18030 or Big5 reading of data whose non-ASCII characters are mostly common Chinese text."""
    best: tuple[float, str] | None = None
    for encoding in ("gb18030", "big5"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        wide = [c for c in text if ord(c) > 0x7F]
        if not wide:
            continue
        share = sum(_is_common(c, encoding) for c in wide) / len(wide)
        if share >= _MIN_COMMON_SHARE and (best is None or share > best[0]):
            best = (share, text)
    return best[1] if best else None


def _is_common(char: str, encoding: str) -> bool:
    """Punctuation, or a hanzi from GB2312 (for GB18030) or from Big5's frequent-character level 1.

    Big5 bytes read as GB18030 (and the reverse) decode without error but land on rare characters,
    which is what tells the two apart even in a short file.
    """
    code = ord(char)
    if 0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFFEF or 0x2010 <= code <= 0x206F or code == 0xB7:
        return True
    if not 0x4E00 <= code <= 0x9FFF:
        return False
    try:
        encoded = char.encode("gb2312" if encoding == "gb18030" else "big5")
    except UnicodeEncodeError:
        return False
    return encoding == "gb18030" or 0xA4 <= encoded[0] <= 0xC6
