"""Text normalisation and segmentation: one code path for ingested documents and queries."""

from backend.text.normalize import clean_document_text, clean_query, normalize
from backend.text.segment import detect_lang, index_tokens, query_terms, segment

__all__ = [
    "clean_document_text",
    "clean_query",
    "detect_lang",
    "index_tokens",
    "normalize",
    "query_terms",
    "segment",
]
