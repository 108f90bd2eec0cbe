"""Stage 2 (rerank by a versioned policy), per-document diversity and Stage 3 (dynamic top-k), as pure
functions over the candidates of one query."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import lru_cache
from typing import Protocol, TypeVar

from backend.retrieval.rerank_policy import RerankPolicy
from backend.text import segment

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
SimilaritySource = str  # "cosine" | "rrf_score / best" | "full_text_score / best"


class Candidate(Protocol):
    """What the reranker reads of a prefetched chunk (hybrid_search / match_documents row)."""

    @property
    def similarity(self) -> float | None: ...
    @property
    def full_text_score(self) -> float | None: ...
    @property
    def rrf_score(self) -> float | None: ...
    @property
    def content_tokens(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def title(self) -> str: ...


def keyword_coverage(query_terms: Sequence[str], content_tokens: str) -> float:
    """Share of the query's significant terms among a chunk's indexed tokens (0..1).

    content_tokens is what ingestion stored (segment() of title > headings + text), so query and
    chunk are compared through the same segmentation, without segmenting the chunk again.
    """
    if not query_terms:
        return 0.0
    tokens = set(content_tokens.split())
    return sum(1 for t in query_terms if t in tokens) / len(query_terms)


def idf_coverage(query_terms: Sequence[str], content_tokens: str, idf: Mapping[str, float]) -> float:
    """Share of the query's idf mass among a chunk's tokens: a rare term found counts for more than a
    common one (a term the corpus statistics do not know weighs the mean of the others)."""
    known = [idf[t] for t in query_terms if t in idf]
    default = sum(known) / len(known) if known else 1.0
    weights = [idf.get(t, default) for t in query_terms]
    total = sum(weights)
    if total <= 0:
        return 0.0
    tokens = set(content_tokens.split())
    return sum(w for t, w in zip(query_terms, weights, strict=True) if t in tokens) / total


@lru_cache(maxsize=4096)
def _title_tokens(title: str) -> frozenset[str]:
    return frozenset(segment(title))


def title_coverage(query_terms: Sequence[str], title: str) -> float:
    """Share of the query's significant terms in the document title (segmented like the index)."""
    if not query_terms or not title:
        return 0.0
    tokens = _title_tokens(title)
    return sum(1 for t in query_terms if t in tokens) / len(query_terms)


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _is_cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def _cjk_bigrams(text: str) -> set[str]:
    # Only characters adjacent in the text pair up: "澳洲，袋鼠" must not make "洲袋".
    return {a + b for a, b in zip(text, text[1:], strict=False) if _is_cjk(a) and _is_cjk(b)}


def _word_bigrams(tokens: Sequence[str]) -> set[str]:
    words = [t for t in tokens if t.isascii() and t.isalnum()]
    return {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}


def query_bigrams(query: str) -> frozenset[str]:
    """The query's phrase evidence: adjacent CJK character pairs, and adjacent (stemmed) Latin words."""
    lowered = query.lower()
    return frozenset(_cjk_bigrams(lowered) | _word_bigrams(segment(_CJK.sub(" ", lowered))))


def phrase_coverage(bigrams: frozenset[str], content: str, content_tokens: str, title: str = "") -> float:
    """Share of the query's bigrams found in the chunk: word order the bag-of-terms features miss, and
    Chinese phrases whatever jieba made of them (stopwords count here: "的" or "of" glue phrases)."""
    if not bigrams:
        return 0.0
    # Substring tests (C speed) rather than the chunk's own bigram set: a pair of CJK characters is a
    # substring exactly when the two stand side by side, and a word pair when " a b " is in the tokens.
    text = f"{title}\n{content}".lower()
    tokens = f" {content_tokens} "
    found = sum(1 for b in bigrams if (f" {b} " in tokens if " " in b else b in text))
    return found / len(bigrams)


def starts_with_heading(content: str) -> bool:
    return bool(_HEADING.match(content))


def candidate_features(
    candidates: Sequence[Candidate],
    query_terms: Sequence[str],
    similarity_source: SimilaritySource,
    query: str = "",
    term_idf: Mapping[str, float] | None = None,
) -> list[dict[str, float]]:
    """Every feature of backend.retrieval.rerank_policy.FEATURES, per candidate.

    Scores whose scale depends on the corpus and the query (BM25, RRF) are divided by the best of the
    query's candidates, so a weight means the same on any corpus; the cosine is kept absolute (its
    scale belongs to the embedding model, which a policy names).
    """
    best_rrf = max((c.rrf_score or 0.0 for c in candidates), default=0.0) or 1.0
    best_ft = max((c.full_text_score or 0.0 for c in candidates), default=0.0) or 1.0
    bigrams = query_bigrams(query)
    out = []
    for c in candidates:
        f = {
            "cosine": c.similarity or 0.0,
            "full_text": (c.full_text_score or 0.0) / best_ft,
            "rrf": (c.rrf_score or 0.0) / best_rrf,
            "keyword_coverage": keyword_coverage(query_terms, c.content_tokens),
            "idf_coverage": idf_coverage(query_terms, c.content_tokens, term_idf or {}),
            "title_coverage": title_coverage(query_terms, c.title),
            "phrase_coverage": phrase_coverage(bigrams, c.content, c.content_tokens, c.title),
            "heading": 1.0 if starts_with_heading(c.content) else 0.0,
        }
        f["similarity"] = {"cosine": f["cosine"], "rrf_score / best": f["rrf"]}.get(
            similarity_source, f["full_text"]
        )
        out.append(f)
    return out


def policy_scores(features: Sequence[dict[str, float]], policy: RerankPolicy) -> list[float]:
    """final_score of each candidate: the weighted sum (linear), or its softmax share (softmax)."""
    raw = [sum(w * f[name] for name, w in policy.weights.items()) for f in features]
    if policy.output == "linear" or not raw:
        return raw
    top = max(raw)
    exp = [math.exp(r - top) for r in raw]
    total = sum(exp)
    return [e / total for e in exp]


def dynamic_top_k(scores: Sequence[float], *, top_k_min: int, top_k_max: int, drop_ratio: float) -> int:
    """How many of the (descending) scores to keep: at least top_k_min, then while
    score >= best * drop_ratio, never more than top_k_max."""
    n = min(len(scores), top_k_max)
    if n == 0:
        return 0
    keep = min(top_k_min, n)
    threshold = scores[0] * drop_ratio
    while keep < n and scores[keep] >= threshold:
        keep += 1
    return keep


T = TypeVar("T")


def diversify(
    ranked: Sequence[T],
    *,
    per_doc_cap: int,
    document: Callable[[T], Hashable],
    content: Callable[[T], Hashable],
) -> list[T]:
    """Seed 000's dedup_and_diversify over a ranked list: an exact duplicate of a better chunk's text is
    dropped, and at most per_doc_cap chunks of one document come before every other document's best
    candidates; a document's further chunks follow, in rank order, only behind all of those (so a
    corpus of one document still fills a large top_k). per_doc_cap 0 keeps the order unchanged."""
    seen: set[Hashable] = set()
    unique: list[T] = []
    for item in ranked:
        key = content(item)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    if per_doc_cap <= 0:
        return unique
    counts: dict[Hashable, int] = {}
    head: list[T] = []
    overflow: list[T] = []
    for item in unique:
        doc = document(item)
        counts[doc] = counts.get(doc, 0) + 1
        (head if counts[doc] <= per_doc_cap else overflow).append(item)
    return head + overflow
