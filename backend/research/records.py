"""Evidence records (seed multi-agent-research.md, Evidence: statement, source, reliability): for each
accepted evidence item a condensed statement (the claim it supports), where it came from and how far
to trust it.

Without a model the statement is the passage's sentence that shares the most anchors with the
sub-question, and the reliability follows the kind of source (the user's own documents and an
encyclopedia entry: high; a web page by its domain's class) raised one step when a source from
somewhere else says the same thing (agreement). With one, the reflection's ratings replace both
(evaluate.py asks for them in the same call as the sufficiency verdict).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from backend.research.types import EvidenceItem
from backend.text.names import anchor_count

Reliability = Literal["high", "medium", "low"]
LEVELS: tuple[Reliability, ...] = ("low", "medium", "high")
STATEMENT_CHARS = 160
ENCYCLOPEDIA_PROVIDERS = frozenset({"baike"})
# Domain classes of a web page (a suffix of its host): reference works and public bodies are high,
# forums and social sites (anyone writes anything) low, everything else medium.
_HIGH_DOMAINS = (
    "baike.baidu.com",
    "wikipedia.org",
    "britannica.com",
    "gov.cn",
    "edu.cn",
    "ac.cn",
    ".gov",
    ".edu",
    "nih.gov",
    "semanticscholar.org",
)
_LOW_DOMAINS = (
    "zhihu.com",
    "tieba.baidu.com",
    "weibo.com",
    "douban.com",
    "reddit.com",
    "quora.com",
    "twitter.com",
    "x.com",
    "facebook.com",
    "bilibili.com",
)
_SENTENCE = re.compile(r"(?<=[。！？!?；;])|(?<=[.])\s+|\n+")


@dataclass
class EvidenceRecord:
    id: int  # the run-wide evidence id (the [n] a section writer cites)
    statement: str  # the claim the passage supports, condensed
    source: str  # the document's title, or the page's title
    url: str | None
    document_id: str | None  # a local passage's document (deleting it erases the record: migration 030)
    source_kind: Literal["document", "encyclopedia", "web"]
    reliability: Reliability
    agreement: int  # other sources (another document or site) that state the same
    anchor_hits: int  # anchors of the sub-question the passage names
    strong_hit: bool  # several anchors at once: a multi-anchor hit (seed 第九次修改)
    method: Literal["heuristic", "llm"] = "heuristic"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def rating(self) -> dict[str, Any]:
        """The record without the passage's words (what a stored reflection keeps: the cited passages'
        full records are the section's evidence_records, erased with their document)."""
        keep = ("id", "source_kind", "reliability", "agreement", "anchor_hits", "strong_hit", "method")
        return {k: v for k, v in asdict(self).items() if k in keep}


def source_kind(item: EvidenceItem) -> Literal["document", "encyclopedia", "web"]:
    chunk = item.chunk
    if chunk.kind != "web":
        return "document"
    host = _host(chunk.url)
    if chunk.provider in ENCYCLOPEDIA_PROVIDERS or host.endswith("baike.baidu.com"):
        return "encyclopedia"
    return "web"


def base_reliability(item: EvidenceItem) -> Reliability:
    """Trust by the kind of source: own documents and encyclopedias high, web pages by domain class."""
    kind = source_kind(item)
    if kind != "web":
        return "high"
    host = _host(item.chunk.url)
    if any(_under(host, d) for d in _HIGH_DOMAINS):
        return "high"
    if any(_under(host, d) for d in _LOW_DOMAINS):
        return "low"
    return "medium"


def condensed_statement(text: str, anchors: Sequence[str]) -> str:
    """The sentence of `text` naming the most anchors (the first on ties), at most STATEMENT_CHARS."""
    sentences = [" ".join(s.split()) for s in _SENTENCE.split(text) if s and s.strip()]
    if not sentences:
        return ""
    best = max(sentences, key=lambda s: (anchor_count(s, anchors), -sentences.index(s)))
    return best if len(best) <= STATEMENT_CHARS else best[: STATEMENT_CHARS - 1].rstrip() + "…"


def strong_hit_threshold(anchors: Sequence[str]) -> int:
    """Anchors a passage must name at once to be a strong hit: 3, or all when fewer; never one alone."""
    return max(2, min(3, len(anchors)))


def heuristic_records(items: Sequence[EvidenceItem], anchors: Sequence[str]) -> list[EvidenceRecord]:
    """A record per item, its reliability raised one step when another origin shares its statement."""
    threshold = strong_hit_threshold(anchors)
    records = []
    for item in items:
        hits = anchor_count(item.chunk.content, anchors)
        records.append(
            EvidenceRecord(
                id=item.id,
                statement=condensed_statement(item.chunk.content, anchors),
                source=item.chunk.title or item.chunk.url or "",
                url=item.chunk.url,
                document_id=None if item.chunk.kind == "web" else str(item.chunk.document_id),
                source_kind=source_kind(item),
                reliability=base_reliability(item),
                agreement=0,
                anchor_hits=hits,
                strong_hit=len(anchors) >= 2 and hits >= threshold,
            )
        )
    for record, item in zip(records, items, strict=True):
        record.agreement = _agreeing(record, item, items, anchors)
        if record.agreement and record.reliability != "high":
            record.reliability = LEVELS[LEVELS.index(record.reliability) + 1]
    return records


def apply_ratings(records: list[EvidenceRecord], ratings: dict[int, tuple[str, Reliability | None]]) -> None:
    """The model's statements and reliabilities (by evidence id) over the heuristic ones."""
    for record in records:
        if record.id not in ratings:
            continue
        statement, reliability = ratings[record.id]
        record.statement = statement[:STATEMENT_CHARS] or record.statement
        record.reliability = reliability or record.reliability
        record.method = "llm"


def _agreeing(
    record: EvidenceRecord, item: EvidenceItem, items: Sequence[EvidenceItem], anchors: Sequence[str]
) -> int:
    """Items of another origin naming the anchors this record's statement names (two at least)."""
    named = [a for a in anchors if a and a.lower() in record.statement.lower()]
    if len(named) < 2:
        return 0
    origin = _origin(item)
    return sum(
        1
        for other in items
        if other is not item
        and _origin(other) != origin
        and anchor_count(other.chunk.content, named) == len(named)
    )


def _origin(item: EvidenceItem) -> str:
    chunk = item.chunk
    return _host(chunk.url) if chunk.kind == "web" else str(chunk.document_id)


def _under(host: str, domain: str) -> bool:
    """`host` is `domain` or one of its subdomains (".gov": any host in that top-level domain)."""
    if domain.startswith("."):
        return host.endswith(domain)
    return host == domain or host.endswith("." + domain)


def _host(url: str | None) -> str:
    return (urlsplit(url).hostname or "").lower() if url else ""
