"""Cross-source dedup (seed: evidence-retention.md, cross_source_dedup): a web hit that repeats local
evidence is dropped (the local chunk wins), and web hits are deduplicated among themselves by canonical
URL, by content hash and by near-duplicate text.

Near duplicates are found with MinHash over shingles of three consecutive units, where a unit is one
CJK character or one run of other letters/digits: character trigrams for Chinese (which has no spaces
to split words on), word trigrams for English. A hit is a near duplicate of an earlier text when their
estimated Jaccard similarity reaches the threshold, or when the hit is (estimated) contained in it: a
search snippet is an excerpt of its page, so against a 500-character chunk it shows as containment,
not as similarity. Shared boilerplate (a site's header and footer) is a small share of two distinct
pages' shingles and keeps both.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

import numpy as np

from backend.text.normalize import normalize
from backend.web.urls import canonical_url

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_UNIT = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_SHINGLE_UNITS = 3
_PERMUTATIONS = 128
_PRIME = np.uint64(4_294_967_311)  # the smallest prime above 2**32: a*x + b stays below 2**64
_rng = np.random.default_rng(20240613)  # fixed: signatures must be comparable across calls and processes
_A = _rng.integers(1, 2**32 - 1, size=_PERMUTATIONS, dtype=np.uint64)
_B = _rng.integers(0, 2**32 - 1, size=_PERMUTATIONS, dtype=np.uint64)
# Below this many shingles a text is too short for a similarity estimate; only exact checks apply.
_MIN_SHINGLES = 4

DropReason = Literal["url", "hash", "near_duplicate", "local_url", "local_hash", "local_near_duplicate"]


def content_hash(text: str) -> str:
    """sha256 of the text in canonical form: NFKC-normalised, case-folded, whitespace removed."""
    folded = "".join(normalize(text).casefold().split())
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()


def shingles(text: str) -> set[int]:
    """32-bit hashes of the text's overlapping unit trigrams (see the module docstring)."""
    units = _UNIT.findall(normalize(text).casefold())
    if len(units) < _SHINGLE_UNITS:
        return {zlib.crc32("\x1f".join(units).encode())} if units else set()
    return {
        zlib.crc32("\x1f".join(units[i : i + _SHINGLE_UNITS]).encode())
        for i in range(len(units) - _SHINGLE_UNITS + 1)
    }


@dataclass(frozen=True)
class Fingerprint:
    """A text's MinHash signature and shingle count (for the containment estimate)."""

    signature: np.ndarray
    size: int

    @classmethod
    def of(cls, text: str) -> Fingerprint:
        values = np.fromiter(shingles(text), dtype=np.uint64)
        if not values.size:
            return cls(np.full(_PERMUTATIONS, _PRIME, dtype=np.uint64), 0)
        hashed = (_A[:, None] * values[None, :] + _B[:, None]) % _PRIME
        return cls(hashed.min(axis=1), int(values.size))

    def jaccard(self, other: Fingerprint) -> float:
        if not self.size or not other.size:
            return 0.0
        return float(np.mean(self.signature == other.signature))

    def contained_in(self, other: Fingerprint) -> float:
        """Estimated share of this text's shingles found in `other`: |A & B| / |A| from J and the sizes."""
        j = self.jaccard(other)
        if not j:
            return 0.0
        return min(1.0, j * (self.size + other.size) / ((1 + j) * self.size))

    def near_duplicate_of(self, other: Fingerprint, threshold: float) -> float | None:
        """The similarity that makes this text a near duplicate of `other`, or None."""
        if self.size < _MIN_SHINGLES or other.size < _MIN_SHINGLES:
            return None
        similarity = max(self.jaccard(other), self.contained_in(other))
        return similarity if similarity >= threshold else None


class WebHit(Protocol):
    @property
    def url(self) -> str: ...

    @property
    def text(self) -> str: ...


Hit = TypeVar("Hit", bound=WebHit)


@dataclass(frozen=True)
class LocalText:
    """A piece of local evidence to protect: its id (chunk id), text, and source URL when it has one."""

    id: str
    text: str
    url: str | None = None


@dataclass(frozen=True)
class DroppedHit:
    url: str
    reason: DropReason
    duplicate_of: str  # the kept web hit's URL, or the local chunk's id
    similarity: float | None = None


@dataclass
class DedupCounts:
    web_in: int = 0
    kept: int = 0
    by_url: int = 0
    by_hash: int = 0
    by_near_duplicate: int = 0
    against_local: int = 0


@dataclass
class DedupResult(Generic[Hit]):
    kept: list[Hit]
    dropped: list[DroppedHit] = field(default_factory=list)
    counts: DedupCounts = field(default_factory=DedupCounts)


def cross_source_dedup(
    local: Sequence[LocalText], web: Sequence[Hit], *, threshold: float = 0.8
) -> DedupResult[Hit]:
    """Web hits minus those repeating local evidence or an earlier (better-ranked) web hit."""
    local_urls = {canonical_url(item.url): item.id for item in local if item.url}
    local_hashes = {content_hash(item.text): item.id for item in local}
    local_prints = _Prints([(item.id, Fingerprint.of(item.text)) for item in local])
    result: DedupResult[Hit] = DedupResult(kept=[], counts=DedupCounts(web_in=len(web)))
    seen_urls: dict[str, str] = {}
    seen_hashes: dict[str, str] = {}
    kept_prints = _Prints()
    for hit in web:
        url, digest = canonical_url(hit.url), content_hash(hit.text)
        printed = Fingerprint.of(hit.text)
        dropped = (
            _exact(url, local_urls, "local_url")
            or _exact(digest, local_hashes, "local_hash")
            or _near(printed, local_prints, threshold, "local_near_duplicate")
            or _exact(url, seen_urls, "url")
            or _exact(digest, seen_hashes, "hash")
            or _near(printed, kept_prints, threshold, "near_duplicate")
        )
        if dropped:
            reason, duplicate_of, similarity = dropped
            result.dropped.append(DroppedHit(hit.url, reason, duplicate_of, similarity))
            _count(result.counts, reason)
            continue
        result.kept.append(hit)
        seen_urls[url] = hit.url
        seen_hashes.setdefault(digest, hit.url)
        kept_prints.append(hit.url, printed)
    result.counts.kept = len(result.kept)
    return result


_Match = tuple[DropReason, str, float | None]


def _exact(key: str, seen: dict[str, str], reason: DropReason) -> _Match | None:
    return (reason, seen[key], None) if key in seen else None


class _Prints:
    """Fingerprints to compare against, as one signature matrix: a hit is checked against all at once."""

    def __init__(self, items: Sequence[tuple[str, Fingerprint]] = ()) -> None:
        self.names: list[str] = []
        self._rows: list[np.ndarray] = []
        self._sizes: list[int] = []
        self._matrix: np.ndarray | None = None
        for name, printed in items:
            self.append(name, printed)

    def append(self, name: str, printed: Fingerprint) -> None:
        if printed.size >= _MIN_SHINGLES:
            self.names.append(name)
            self._rows.append(printed.signature)
            self._sizes.append(printed.size)
            self._matrix = None

    def match(self, printed: Fingerprint, threshold: float) -> tuple[str, float] | None:
        """The first text this one nearly duplicates (Jaccard, or containment in it) and the similarity."""
        if printed.size < _MIN_SHINGLES or not self.names:
            return None
        if self._matrix is None:
            self._matrix = np.vstack(self._rows)
        jaccard = (self._matrix == printed.signature).mean(axis=1)
        sizes = np.asarray(self._sizes, dtype=np.float64)
        contained = np.minimum(1.0, jaccard * (printed.size + sizes) / ((1 + jaccard) * printed.size))
        similarity = np.maximum(jaccard, contained)
        hits = np.flatnonzero(similarity >= threshold)
        return (self.names[hits[0]], float(similarity[hits[0]])) if hits.size else None


def _near(printed: Fingerprint, others: _Prints, threshold: float, reason: DropReason) -> _Match | None:
    found = others.match(printed, threshold)
    return (reason, found[0], round(found[1], 3)) if found else None


def _count(counts: DedupCounts, reason: DropReason) -> None:
    if reason.startswith("local_"):
        counts.against_local += 1
    elif reason == "url":
        counts.by_url += 1
    elif reason == "hash":
        counts.by_hash += 1
    else:
        counts.by_near_duplicate += 1
