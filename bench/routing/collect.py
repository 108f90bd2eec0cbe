"""Ingest one half of a development set and search every question of both halves."""

from __future__ import annotations

from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.chat.options import EvidenceOptions
from backend.composition import Services
from backend.search.types import SearchRequest
from backend.text import query_terms
from bench.common import log
from bench.routing.records import QuestionRecord, search_record
from bench.routing.split import Question
from bench.routing.terms import corpus_chunks, term_statistics


def search_all(services: Services, set_name: str, questions: list[Question]) -> list[QuestionRecord]:
    """Each question through the /search default and through the /chat main search's depth."""
    budget = EvidenceOptions().budget(services.settings)
    with services.pool.connection() as conn:
        n_chunks = corpus_chunks(conn)
    out = []
    for n, q in enumerate(questions, 1):
        terms = query_terms(q.text)
        with services.pool.connection() as conn:
            idfs, dfs = term_statistics(conn, terms)
        default = services.retrieval.search(SearchRequest(query=q.text), identity=LOCAL_IDENTITY)
        chat = services.retrieval.search(
            SearchRequest(
                query=q.text, top_k=budget.local_recall_k, prefetch_k=budget.actual_recall, dynamic=False
            ),
            identity=LOCAL_IDENTITY,
        )
        record = QuestionRecord(set_name, q.qid, q.text, q.answerable, q.gold_doc, terms, idfs, dfs, n_chunks)
        record.searches = {
            "default": search_record(default.diagnostics.parameters.prefetch_k, default, terms),
            "chat": search_record(budget.actual_recall, chat, terms),
        }
        out.append(record)
        if n % 250 == 0:
            log(f"  {set_name}: {n}/{len(questions)} questions searched")
    return out


def depth_parameters(services: Services) -> dict[str, Any]:
    budget = EvidenceOptions().budget(services.settings)
    return {"default": services.settings.rag_prefetch_k, "chat": budget.actual_recall}
