"""What the benchmark keeps of one search: compact candidates, term statistics, the product's verdict.

Candidates keep the fields the confidence reads. content_tokens is reduced to the query terms the
chunk's tokens hold, and content to the query terms its text holds (space-separated), which is all a
coverage feature can read of them, so a record can be re-scored offline (bench/routing/fit.py)
exactly as the live search would be. The full text of every chunk of the corpus is kept once per run
beside the records (<key>.chunks.json.gz) and given back to each candidate as `text` on loading:
the sentence-level features (backend/confidence/sentences.py) read whole sentences.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from backend.search.types import ScoredChunk, SearchResult
from backend.text import detect_lang, normalize


@dataclass
class Candidate:
    """A ScoredChunk-like row (the attributes backend.confidence reads)."""

    chunk_id: int
    document_id: str
    external_id: str
    title: str
    heading_path: list[str]
    similarity: float | None
    vector_rank: int | None
    full_text_rank: int | None
    rrf_score: float | None
    keyword_coverage: float
    final_score: float
    content_tokens: str  # only the query terms among the chunk's indexed tokens
    content: str = ""  # only the query terms its text contains (what a coverage feature can read)
    content_language: str = ""  # detect_lang of its text ('' in records stored before issue 26)
    text: str = field(default="", repr=False)  # its full text, from <key>.chunks.json.gz (not stored here)


@dataclass
class SearchRecord:
    """One question searched at one candidate depth."""

    depth: int
    candidates: list[Candidate]
    confidence: dict[str, Any]  # the product's section-10 output for this search (top_parents trimmed)


@dataclass
class ChatRecord:
    qid: str
    answerable: bool
    outcome: str  # what /chat did with default settings: answer, clarify or not_found
    gold_in_answer: bool  # a gold answer string occurs in that reply
    generator_answer: str  # the reply with clarification off: what the generator says from the evidence
    generator_gold: bool  # ... and whether it contains a gold string
    answer: str  # the default reply (truncated)


@dataclass
class QuestionRecord:
    set: str
    qid: str
    text: str
    answerable: bool
    gold_doc: str
    terms: list[str]  # query_terms(text), as the search used them
    term_idfs: dict[str, float]  # idf of each term in the ingested corpus (hybrid_search_terms)
    term_dfs: dict[str, int]
    n_chunks: int  # chunks in the corpus
    searches: dict[str, SearchRecord] = field(default_factory=dict)  # "default" (/search), "chat"


def candidate(chunk: ScoredChunk, terms: list[str]) -> Candidate:
    tokens = set(chunk.content_tokens.split())
    text = normalize(chunk.content).lower()
    return Candidate(
        chunk_id=chunk.chunk_id,
        document_id=str(chunk.document_id),
        external_id=chunk.external_id,
        title=chunk.title,
        heading_path=list(chunk.heading_path),
        similarity=chunk.similarity,
        vector_rank=chunk.vector_rank,
        full_text_rank=chunk.full_text_rank,
        rrf_score=chunk.rrf_score,
        keyword_coverage=chunk.keyword_coverage,
        final_score=chunk.final_score,
        content_tokens=" ".join(t for t in terms if t in tokens),
        content=" ".join(t for t in terms if t in text),
        content_language=detect_lang(chunk.content),
    )


def search_record(depth: int, result: SearchResult, terms: list[str]) -> SearchRecord:
    confidence = dict(result.confidence)
    confidence["top_parents"] = [
        {k: p[k] for k in ("parent_id", "title", "overall_score", "risk_flags")}
        for p in confidence.get("top_parents", [])[:2]
    ]
    return SearchRecord(depth, [candidate(c, terms) for c in result.candidates], confidence)


def save_records(path: Path, records: list[QuestionRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
    tmp.replace(path)


def save_chunk_texts(path: Path, texts: dict[int, str]) -> None:
    """Every chunk's text of the run's corpus, by chunk id (stored once, not per candidate)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        json.dump({str(k): v for k, v in texts.items()}, fh, ensure_ascii=False)
    tmp.replace(path)


def load_records(path: Path) -> list[QuestionRecord]:
    """The stored searches; candidates stored without their language get the one of their document's
    text in the corpus the run ingested (<stem>/corpus.jsonl next to the records, when it is there),
    and every candidate its full text when the run kept the chunk texts (<stem>.chunks.json.gz)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = [_record(json.loads(line)) for line in fh if line.strip()]
    texts_path = path.with_name(path.name.removesuffix(".records.jsonl.gz") + ".chunks.json.gz")
    if texts_path.is_file():
        with gzip.open(texts_path, "rt", encoding="utf-8") as fh:
            texts = {int(k): v for k, v in json.load(fh).items()}
        for r in records:
            for s in r.searches.values():
                for c in s.candidates:
                    c.text = texts.get(c.chunk_id, "")
    corpus = path.with_name(path.name.removesuffix(".records.jsonl.gz")) / "corpus.jsonl"
    if corpus.is_file() and any(
        not c.content_language for r in records for s in r.searches.values() for c in s.candidates
    ):
        attach_languages(records, corpus)
    return records


def attach_languages(records: list[QuestionRecord], corpus: Path) -> None:
    """Set each candidate's missing content_language from its document (title and text) in `corpus`.
    The development sets' documents are monolingual, so a chunk's language is its document's."""
    languages: dict[str, str] = {}
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                languages[str(row["_id"])] = detect_lang(f"{row.get('title', '')}\n{row.get('text', '')}")
    for r in records:
        for s in r.searches.values():
            for c in s.candidates:
                if not c.content_language:
                    c.content_language = languages.get(c.external_id, "")


def _record(data: dict[str, Any]) -> QuestionRecord:
    searches = {
        name: SearchRecord(
            s["depth"],
            [Candidate(**{k: v for k, v in c.items() if k != "text"}) for c in s["candidates"]],
            s["confidence"],
        )
        for name, s in data.pop("searches").items()
    }
    return QuestionRecord(**data, searches=searches)


def save_chats(path: Path, payload: dict[str, Any]) -> None:
    """The set's chat sample with the chunk totals and ingest summary of the same database."""
    data = {**payload, "chats": [asdict(c) for c in payload["chats"]]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def load_chats(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["chats"] = [ChatRecord(**c) for c in data["chats"]]
    return data
