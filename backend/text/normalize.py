"""The seed's clean_query_basic rules: NFKC, no control characters, unified punctuation, folded space."""

from __future__ import annotations

import re
import unicodedata

# Punctuation NFKC leaves alone but that has an ASCII twin (quotes, dashes, CJK brackets).
_PUNCT_MAP = str.maketrans(
    {
        "\u201c": '"',  # “
        "\u201d": '"',  # ”
        "\u2018": "'",  # ‘
        "\u2019": "'",  # ’
        "\u300c": '"',  # 「
        "\u300d": '"',  # 」
        "\u300e": '"',  # 『
        "\u300f": '"',  # 』
        "\u2014": "-",  # —
        "\u2013": "-",  # –
        "\u2012": "-",
        "\u2015": "-",
        "\u3010": "[",  # 【
        "\u3011": "]",  # 】
        "\u3014": "(",  # 〔
        "\u3015": ")",  # 〕
        "\u00a0": " ",
        "\u3000": " ",
    }
)
# Control and invisible characters, and unpaired surrogates (not characters: a PDF's text layer can
# hold them, and neither UTF-8 nor PostgreSQL can).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\ufeff\ud800-\udfff]")
_SPACES = re.compile(r"[ \t\f\v]+")
_ALL_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFKC, control characters dropped, punctuation unified; line breaks kept, runs of spaces folded."""
    text = unicodedata.normalize("NFKC", text).translate(_PUNCT_MAP)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n")).strip()


def clean_query(text: str) -> str:
    """A query in canonical form: normalize() with all whitespace folded to single spaces."""
    return _ALL_SPACE.sub(" ", normalize(text)).strip()


def clean_document_text(text: str) -> str:
    """Document text for storage and display: original characters, but no control characters,
    unified line endings and no trailing spaces (NFKC would turn Chinese punctuation half-width,
    which readers notice; normalize() is applied where tokens and vectors are computed)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    text = _CONTROL.sub("", text)
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def has_control_characters(text: str) -> bool:
    """Whether text holds characters no identifier or label should (NUL, other C0/C1 controls)."""
    return bool(_CONTROL.search(text.replace("\t", "")))


def strip_control_characters(text: str) -> str:
    """text without control characters (line breaks and tabs kept): PostgreSQL refuses NUL in text."""
    return _CONTROL.sub("", text)
