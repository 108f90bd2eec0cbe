"""Document and chunk metadata: derived fields, the seed's quality score, whitelist validation."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from backend.errors import InvalidInput
from backend.ingest.documents import LoadedDocument
from backend.text.normalize import has_control_characters
from backend.text.segment import detect_lang, keyphrases

# Seed weights (质量评分配置); without an OCR confidence its weight is spread over the other three.
_WEIGHTS = {"garbled": 0.4, "valid": 0.2, "length": 0.2, "ocr": 0.2}
_STRING_KEYS = ("doc_id", "source", "filename", "content_type", "media_type", "lang")


def quality_score(text: str, *, min_len: int, sat_len: int, ocr_confidence: float | None = None) -> float:
    """Weighted 0..1 score of clean characters, valid characters, length and (optionally) OCR confidence."""
    if not text:
        return 0.0
    total = len(text)
    garbled = 1 - sum(_is_garbled(c) for c in text) / total
    valid = sum(_is_valid(c) for c in text) / total
    scores = {"garbled": garbled, "valid": valid, "length": _length_score(total, min_len, sat_len)}
    if ocr_confidence is not None:
        scores["ocr"] = min(max(ocr_confidence, 0.0), 1.0)
    weight_sum = sum(_WEIGHTS[name] for name in scores)
    return round(sum(_WEIGHTS[name] * value for name, value in scores.items()) / weight_sum, 4)


def _is_garbled(char: str) -> bool:
    return char == "\ufffd" or (not char.isprintable() and char not in "\n\t")


def _is_valid(char: str) -> bool:
    # isalnum() covers CJK ideographs (category Lo) and full-width digits.
    return char.isalnum() or char.isspace() or unicodedata.category(char).startswith("P")


def _length_score(length: int, min_len: int, sat_len: int) -> float:
    if length < min_len:
        return 0.0
    if length >= sat_len:
        return 1.0
    return (length - min_len) / (sat_len - min_len)


def chunk_metadata(text: str, *, min_chars: int, sat_len: int, keyphrase_top_k: int) -> dict:
    """Per-chunk fields: lang, text_len, too_short, quality_score, keyphrases."""
    return {
        "lang": detect_lang(text),
        "text_len": len(text),
        "too_short": len(text) < min_chars,
        "quality_score": quality_score(text, min_len=min_chars, sat_len=sat_len),
        "keyphrases": keyphrases(text, keyphrase_top_k),
    }


def document_metadata(doc: LoadedDocument) -> dict:
    """Derived document fields (source, filename, content_type, lang, text_len, created_at) + doc.metadata."""
    derived = {
        "source": doc.source,
        "filename": doc.filename,
        "content_type": doc.content_type,
        "lang": detect_lang(doc.content),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # Caller values win (a known created_at or lang), except text_len, which is always measured.
    merged = {**derived, **doc.metadata, "text_len": len(doc.content)}
    return {key: value for key, value in merged.items() if value is not None}


def validate_metadata(metadata: dict, whitelist: Sequence[str]) -> dict:
    """A copy of metadata if all keys are whitelisted and known keys well typed; else InvalidInput."""
    if not isinstance(metadata, dict):
        raise InvalidInput(f"metadata must be a JSON object, not {type(metadata).__name__}")
    unknown = [str(key) for key in metadata if key not in whitelist]
    if unknown:
        raise InvalidInput(
            f"metadata keys not allowed: {', '.join(sorted(unknown))} (allowed: {', '.join(whitelist)})"
        )
    problems = [f"{key} {why}" for key, value in metadata.items() if (why := _type_problem(key, value))]
    if problems:
        raise InvalidInput("invalid metadata: " + "; ".join(problems))
    return dict(metadata)


def _type_problem(key: str, value: Any) -> str | None:
    """Why value does not fit the seed's type for key, or None (keys without a known type pass)."""
    if _holds_control_characters(value):
        return "contains control characters"
    if key in ("tags", "keyphrases"):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return "must be a list of strings"
    elif key in ("text_len", "quality_score"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
    elif key == "too_short":
        if not isinstance(value, bool):
            return "must be true or false"
    elif key == "created_at":
        if not isinstance(value, str) or not _is_iso8601(value):
            return "must be an ISO 8601 date or timestamp string"
    elif key in _STRING_KEYS and not isinstance(value, str):
        return "must be a string"
    return None


def _is_iso8601(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _holds_control_characters(value: Any) -> bool:
    if isinstance(value, str):
        return has_control_characters(value)
    if isinstance(value, dict):
        return any(_holds_control_characters(k) or _holds_control_characters(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_control_characters(v) for v in value)
    return False
