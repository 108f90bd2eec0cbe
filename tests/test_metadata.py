"""Metadata: the seed's quality score, chunk and document fields, whitelist and type validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backend.config import DEFAULT_METADATA_WHITELIST
from backend.errors import InvalidInput
from backend.ingest.documents import LoadedDocument
from backend.ingest.metadata import chunk_metadata, document_metadata, quality_score, validate_metadata

ZH = "混合检索把关键词检索和向量检索的结果融合在一起，再按相似度重排，得到更稳定的召回效果。" * 3


def score(text: str, ocr: float | None = None) -> float:
    return quality_score(text, min_len=20, sat_len=200, ocr_confidence=ocr)


def test_clean_long_text_scores_one():
    assert len(ZH) < 200
    assert score(ZH * 2) == 1.0


@pytest.mark.parametrize(
    ("text", "ocr", "expected"),
    [
        ("a" * 110, None, 0.875),  # length halfway between min and sat: 0.5 + 0.25 + 0.25 * 0.5
        ("a" * 10, None, 0.75),  # below min_len: length scores 0
        ("a" * 200, 0.5, 0.9),  # OCR weight back: 0.4 + 0.2 + 0.2 + 0.2 * 0.5
        ("a" * 200, None, 1.0),
        ("\ufffd" * 100 + "a" * 100, None, 0.625),  # half garbled and half invalid: 0.25 + 0.125 + 0.25
        ("$" * 200, None, 0.75),  # symbols are printable but not valid text
        ("", None, 0.0),
    ],
)
def test_quality_score_follows_the_seed_weights(text, ocr, expected):
    assert score(text, ocr) == expected


def test_quality_score_is_rounded_to_four_decimals():
    value = score("a" * 80)  # length (80 - 20) / 180 = 1/3
    assert value == round(0.75 + 0.25 / 3, 4)


def test_control_characters_count_as_garbled_but_line_breaks_do_not():
    assert score("ab\ncd\t" * 40) == 1.0
    assert score("ab\x07" * 70) < 1.0


def test_chunk_metadata_fields():
    meta = chunk_metadata(ZH, min_chars=20, sat_len=200, keyphrase_top_k=5)
    assert (meta["lang"], meta["text_len"], meta["too_short"]) == ("zh", len(ZH), False)
    assert 0.9 < meta["quality_score"] <= 1.0
    assert 1 <= len(meta["keyphrases"]) <= 5
    assert "检索" in meta["keyphrases"]
    short = chunk_metadata("Too short.", min_chars=20, sat_len=200, keyphrase_top_k=0)
    assert (short["lang"], short["too_short"], short["keyphrases"]) == ("en", True, [])


def _doc(**overrides) -> LoadedDocument:
    fields = {
        "title": "T",
        "content": "Plain English text.",
        "source": "docs/a.md",
        "filename": "a.md",
        "content_type": "text/markdown",
    }
    return LoadedDocument(**{**fields, **overrides})


def test_document_metadata_derives_fields_and_keeps_caller_values():
    meta = document_metadata(_doc(metadata={"tags": ["faq"], "lang": "zh", "text_len": 1}))
    created = datetime.fromisoformat(meta.pop("created_at"))
    assert created.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - created) < timedelta(seconds=5)
    assert meta == {
        "source": "docs/a.md",
        "filename": "a.md",
        "content_type": "text/markdown",
        "lang": "zh",
        "tags": ["faq"],
        "text_len": len("Plain English text."),
    }
    validate_metadata(document_metadata(_doc()), DEFAULT_METADATA_WHITELIST)


def test_document_metadata_omits_a_missing_filename():
    assert "filename" not in document_metadata(_doc(filename=None))


def test_validate_metadata_names_unknown_keys_and_the_allowed_ones():
    with pytest.raises(InvalidInput) as excinfo:
        validate_metadata({"tags": ["x"], "url": "u", "author": "a"}, ["tags", "lang"])
    assert str(excinfo.value) == "metadata keys not allowed: author, url (allowed: tags, lang)"


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"tags": "faq"}, "tags must be a list of strings"),
        ({"keyphrases": ["a", 1]}, "keyphrases must be a list of strings"),
        ({"text_len": True}, "text_len must be a number"),
        ({"too_short": "no"}, "too_short must be true or false"),
        ({"created_at": "yesterday"}, "created_at must be an ISO 8601 date or timestamp string"),
        ({"source": 5}, "source must be a string"),
    ],
)
def test_validate_metadata_checks_known_types(metadata, problem):
    with pytest.raises(InvalidInput, match=f"^invalid metadata: {problem}$"):
        validate_metadata(metadata, DEFAULT_METADATA_WHITELIST)


def test_validate_metadata_returns_a_copy_of_valid_metadata():
    metadata = {
        "tags": ["a"],
        "text_len": 3.0,
        "too_short": False,
        "created_at": "2024-05-01T08:00:00Z",
        "quality_score": 0.5,
        "lang": "zh",
    }
    result = validate_metadata(metadata, DEFAULT_METADATA_WHITELIST)
    assert result == metadata
    assert result is not metadata
    with pytest.raises(InvalidInput, match="must be a JSON object"):
        validate_metadata(["tags"], DEFAULT_METADATA_WHITELIST)  # type: ignore[arg-type]
