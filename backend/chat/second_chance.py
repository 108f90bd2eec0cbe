"""A second chance before "not found" (issue 26 item 4): when the turn's first search is weak - its
confidence would route away from the documents - the question is reformulated once and searched again,
before routing: its content words only (backend/text/keywords.py), the other language (only with a
model that can translate; without one it is skipped, and the diagnostics say so), and without the
filters read in it (when some were). The attempt with the best confidence score goes on, provided it
is not weak itself - and the keyword form only from the policy's T_high (`earns_switch`); the first
search stays unless one beats it, so the second chance is never worse by its own measure.

Each reformulation is one more search with the turn's budget (the same recall), run in the local
search's thread: beside a web leg it counts against the same WEB_LOCAL_TIMEOUT_S.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from backend.chat.diagnostics import AttemptKind, AttemptOut, SecondChanceDiagnostics
from backend.confidence.routing import route_for
from backend.config import Settings
from backend.errors import DomainError
from backend.llm import LLM, load_prompt
from backend.llm.prompts import neutralise
from backend.search.types import SearchResult
from backend.text import clean_query, detect_lang
from backend.text.keywords import keyword_query

log = logging.getLogger(__name__)

# (query, infer_filters) -> the search with the turn's options and budget
Searcher = Callable[[str, bool], SearchResult]
_TARGET = {"zh": "English", "en": "Simplified Chinese (简体中文)"}
_CJK_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclass(frozen=True)
class Reformulation:
    kind: AttemptKind
    query: str
    infer_filters: bool


def weak(search: SearchResult, settings: Settings) -> bool:
    """The search's confidence would route away from the documents (web fallback / not found)."""
    return route_for(search.confidence, settings, web_available=False) == "not_in_documents"


def second_chance(
    first: SearchResult,
    question: str,
    *,
    infer_filters: bool,
    first_ms: float,
    search: Searcher,
    llm: LLM,
    settings: Settings,
) -> tuple[SearchResult, SecondChanceDiagnostics]:
    """The better of the first search and its reformulations (blocking: run it in a thread)."""
    if not settings.chat_second_chance_enabled or not weak(first, settings):
        return first, SecondChanceDiagnostics(triggered=False)
    level = first.confidence.get("confidence_level")
    reason = f"confidence {level} ({_score(first):.3f}): the route would be not in the documents"
    original = _out(Reformulation("original", question, infer_filters), first, first_ms, settings)
    diagnostics = SecondChanceDiagnostics(triggered=True, reason=reason, attempts=[original])
    best = first
    tried = {(clean_query(question), infer_filters)}
    for plan in reformulations(first, question, infer_filters, llm, diagnostics.skipped, settings):
        if (plan.query, plan.infer_filters) in tried:
            continue
        tried.add((plan.query, plan.infer_filters))
        started = time.perf_counter()
        try:
            found = search(plan.query, plan.infer_filters)
        except (DomainError, psycopg.Error) as exc:
            log.warning("[chat] second-chance search %s failed for %r: %s", plan.kind, plan.query, exc)
            diagnostics.attempts.append(_failed(plan, str(exc), started))
            continue
        diagnostics.attempts.append(_out(plan, found, _ms(started), settings))
        if _score(found) > _score(best) and earns_switch(plan, found, settings):
            best, diagnostics.chosen = found, plan.kind
    return best, diagnostics


def earns_switch(plan: Reformulation, search: SearchResult, settings: Settings) -> bool:
    """A reformulation replaces the first search only when it is not weak itself, and the keyword form
    only with a score the policy takes to hold the answer (T_high): it drops words, so a passage on the
    topic that does not answer scores higher under it than under the question (measured: docs/routing.md,
    "Second chance"). A translation or the unfiltered question drops nothing the question said."""
    if weak(search, settings):
        return False
    high = (search.confidence.get("thresholds_used") or {}).get("T_high")
    return plan.kind != "keywords" or high is None or _score(search) >= high


def reformulations(
    first: SearchResult,
    question: str,
    infer_filters: bool,
    llm: LLM,
    skipped: list[str],
    settings: Settings,
) -> list[Reformulation]:
    """What to try, in order: keywords, the other language, without the inferred filter."""
    plans = []
    keywords = keyword_query(question)
    if keywords is None:
        skipped.append("keywords: the question has no content word")
    elif _CJK_WORD.fullmatch(keywords):
        # A name or an identifier alone (HNSW, rrf_k) is specific; one common word (成语) finds its topic.
        skipped.append(f"keywords: one common word ({keywords}) is too broad")
    else:
        plans.append(Reformulation("keywords", keywords, infer_filters))
    translated = translate(question, llm, settings, skipped)
    if translated:
        plans.append(Reformulation("other_language", translated, infer_filters))
    where = first.diagnostics.where
    if infer_filters and where is not None and where.inferred and not where.relaxed:
        plans.append(Reformulation("no_inferred_filter", question, False))
    return plans


def translate(question: str, llm: LLM, settings: Settings, skipped: list[str]) -> str | None:
    """The question in the other language (Chinese <-> English), or None (the reason in `skipped`)."""
    target = _TARGET.get(detect_lang(question))
    if target is None:
        skipped.append("other_language: the question's language is neither Chinese nor English")
        return None
    prompt = load_prompt("translate_query").render(target=target, question=neutralise(question))
    try:
        completion = llm.complete("", prompt)
    except DomainError as exc:
        skipped.append(f"other_language: the model failed ({exc})")
        return None
    if completion is None:
        skipped.append("other_language: needs a model that can translate (the generator is extractive)")
        return None
    lines = [line.strip() for line in completion.splitlines() if line.strip()]
    text = clean_query(lines[0]) if lines else ""
    if not text or len(text) > settings.max_query_chars:
        skipped.append("other_language: the model's translation was empty or too long")
        return None
    return text


def _score(search: SearchResult) -> float:
    return float(search.confidence.get("best_overall_score") or 0.0)


def _out(plan: Reformulation, found: SearchResult, ms: float, settings: Settings) -> AttemptOut:
    return AttemptOut(
        kind=plan.kind,
        query=plan.query,
        infer_filters=plan.infer_filters,
        best_overall_score=round(_score(found), 6),
        confidence_level=found.confidence.get("confidence_level"),
        weak=weak(found, settings),
        ms=ms,
    )


def _failed(plan: Reformulation, error: str, started: float) -> AttemptOut:
    return AttemptOut(
        kind=plan.kind,
        query=plan.query,
        infer_filters=plan.infer_filters,
        best_overall_score=None,
        ms=_ms(started),
        error=error,
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
