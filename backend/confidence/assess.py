"""One confidence per question: any versioned policy applied to one search's fused candidates.

    policy = load_score_policy(settings.score_policy_version, directory)
    confidence = assess(result.candidates, policy, terms=query_terms, term_idfs=idfs,
                        chunk_totals=totals, top_n=settings.confidence_top_n)

Seed-formula policies (v1, v2) read chunk_totals; answerability policies (v3) read terms and
term_idfs (idf per query term, as hybrid_search_terms reports it), fusion (the RRF settings) and,
for a policy weighing sentence-level features (v5), the question's text,
and score the head of the fusion a /search-depth search would have (answerability.scored_candidates),
so /search, /chat and /research get the same number from searches of different depths.
Both return the section-10 contract of overall-score-confidence.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from backend.confidence.answerability import (
    Candidate,
    DocumentEvidence,
    Fusion,
    background_cosine,
    document_evidence,
    document_score,
    features,
    ranked_background,
    scored_candidates,
)
from backend.confidence.answerability_policy import FORMULA, SENTENCE_FEATURES, AnswerabilityPolicy
from backend.confidence.policy import (
    POLICIES_DIR,
    SCORE_POLICY_FILES,
    SEED_FORMULA,
    Policy,
    PolicyError,
    formula_of,
    load_policy,
)
from backend.confidence.scoring import retrieval_confidence

ScorePolicy = Policy | AnswerabilityPolicy
DEFAULT_FUSION = Fusion()  # the Settings defaults: RAG_RRF_K 60, both weights 1


def load_score_policy(version: str, directory: Path = POLICIES_DIR) -> ScorePolicy:
    """Any policy version, whichever formula its file declares."""
    path, name, data = SCORE_POLICY_FILES.read(version, directory)
    formula = formula_of(data)
    if formula == SEED_FORMULA:
        return load_policy(version, directory)
    if formula != FORMULA:
        raise PolicyError(f"{path}: unknown formula {formula!r} (known: {SEED_FORMULA}, {FORMULA})")
    policy = AnswerabilityPolicy.from_json(data)
    SCORE_POLICY_FILES.check_version(path, policy.version, name)
    return policy


def assess(
    candidates: Sequence[Any],
    policy: ScorePolicy,
    *,
    terms: Sequence[str] = (),
    term_idfs: Mapping[str, float] | None = None,
    chunk_totals: Mapping[Any, int] | None = None,
    fusion: Fusion = DEFAULT_FUSION,
    top_n: int = 5,
    question: str | None = None,
) -> dict[str, Any]:
    """The section-10 confidence of one search under `policy`."""
    if isinstance(policy, Policy):
        if chunk_totals is None:
            raise ValueError(f"policy {policy.version} (seed formula) needs chunk_totals")
        return retrieval_confidence(candidates, chunk_totals, policy, top_n=top_n)
    return answerability_confidence(
        candidates,
        policy,
        terms=terms,
        term_idfs=term_idfs,
        chunk_totals=chunk_totals,
        fusion=fusion,
        top_n=top_n,
        question=question,
    )


def answerability_confidence(
    candidates: Sequence[Candidate],
    policy: AnswerabilityPolicy,
    *,
    terms: Sequence[str],
    term_idfs: Mapping[str, float] | None,
    chunk_totals: Mapping[Any, int] | None = None,
    fusion: Fusion = DEFAULT_FUSION,
    top_n: int = 5,
    question: str | None = None,
) -> dict[str, Any]:
    """Score each candidate document; the best one's score, level, need_hitl and web fallback.
    The sentence-level features are read only when the policy weighs them (and `question` is given)."""
    scored = scored_candidates(candidates, policy.depth, policy.leg_depth, fusion)
    background = background_cosine(scored)
    branch = policy.cross_lingual
    # v7: a cross-lingual document's lift against the branch's own, deeper background (of all candidates)
    deep = (
        ranked_background(candidates, branch.background_rank)
        if branch is not None and branch.background_rank is not None
        else None
    )
    sentence_level = question is not None and any(f in policy.all_weights for f in SENTENCE_FEATURES)
    parents = []
    for doc in document_evidence(scored, terms, term_idfs, question, read_sentences=sentence_level):
        values = features(doc, deep if doc.cross_lingual and deep is not None else background)
        parents.append((document_score(values, policy), doc, values))
    parents.sort(key=lambda p: -p[0])  # stable: ties keep the fused order

    best = parents[0][0] if parents else 0.0
    # The runner-up is the next document scored by the same model as the best: a ratio of scores means
    # something within one model only (v6 on, a cross-lingual document is scored by the branch's, whose
    # steeper scale would make a passage in the other language — often the same text translated — a
    # rival of every good answer).
    rival = next((p for p in parents[1:] if _model(p[1], policy) == _model(parents[0][1], policy)), None)
    runner = rival[0] if rival is not None else None
    ratio = runner / best if runner is not None and best > 0 else None
    # Clarify only between documents that each look like they hold the answer (never irrelevant
    # ones) and that the user can tell apart: two parts of one title are answered from, not asked about.
    need_hitl = (
        rival is not None
        and rival[0] >= policy.t_high
        and ratio is not None
        and ratio >= policy.r_hitl
        and _name(parents[0][1]) != _name(rival[1])
    )
    if best < policy.t_low:
        level = "low"
    else:  # two competing answers are not a confident one: need_hitl caps the level at medium
        level = "high" if best >= policy.t_high and not need_hitl else "medium"
    if not parents:
        fallback, reason = True, "no_results"
    elif level == "low":
        fallback, reason = True, "low_confidence"
    else:
        fallback, reason = False, None
    rival_doc = rival[1] if rival is not None else None
    # single_spike needs both legs to have run (a vector-only search has no full-text ranks at all).
    both_legs = any(c.vector_rank is not None for c in scored) and any(
        c.full_text_rank is not None for c in scored
    )
    top = [
        _parent_entry(
            score,
            doc,
            values,
            policy,
            chunk_totals,
            runner_up=need_hitl and doc is rival_doc,
            both_legs=both_legs,
        )
        for score, doc, values in parents[:top_n]
    ]
    return {
        "score_policy_version": policy.score_policy_version,
        "formula": FORMULA,
        "normalization": "per_query",  # cosine relative to the query's own candidates
        "best_parent_id": parents[0][1].parent_id if parents else None,
        "best_overall_score": _round(best),
        "confidence_level": level,
        "thresholds_used": policy.thresholds,
        "score_ratio": _round(ratio),
        "need_hitl": need_hitl,
        "web_fallback": fallback,
        "web_fallback_reason": reason,
        "parents_considered": len(parents),
        "candidates_scored": len(scored),
        "score_source": "answerability",
        "top_parents": top,
    }


def _parent_entry(
    score: float,
    doc: DocumentEvidence,
    values: Mapping[str, float],
    policy: AnswerabilityPolicy,
    chunk_totals: Mapping[Any, int] | None,
    *,
    runner_up: bool,
    both_legs: bool,
) -> dict[str, Any]:
    # strength / coverage / stability keep the seed's three dimensions: meaning, terms, agreement
    # (as the policy reads them: a language-aware one through the comparable terms and legs).
    aware = "comparable_coverage" in policy.weights or "comparable_agreement" in policy.weights
    return {
        "parent_id": doc.parent_id,
        "title": doc.title,
        "overall_score": _round(score),
        "strength": _round(values["cosine_lift"]),
        "coverage": _round(values["comparable_coverage" if aware else "term_coverage"]),
        "stability": _round(values["comparable_agreement" if aware else "leg_agreement"]),
        "risk_flags": risk_flags(doc, values, policy, chunk_totals, runner_up=runner_up, both_legs=both_legs),
        "features": {
            "cosine": _round(doc.cosine),
            "cosine_lift": _round(values["cosine_lift"]),
            "term_coverage": _round(values["term_coverage"]),
            "leg_agreement": values["leg_agreement"],
            "comparable_coverage": _round(values["comparable_coverage"]),
            "cross_lingual": doc.cross_lingual,
            "vector_rank": doc.vector_rank,
            "full_text_rank": doc.full_text_rank,
            "hit_chunks": doc.hit_chunks,
            "missing_terms": list(doc.missing_terms[:5]),
            **(
                {
                    "question_type": doc.sentences.asked,
                    "sentence_coverage": _round(values["sentence_coverage"]),
                    "answer_type_held": values["answer_type"] == 1.0,
                    "answer_sentence": _round(values["answer_sentence"]),
                }
                if doc.sentences is not None
                else {}
            ),
        },
    }


def risk_flags(
    doc: DocumentEvidence,
    values: Mapping[str, float],
    policy: AnswerabilityPolicy,
    chunk_totals: Mapping[Any, int] | None,
    *,
    runner_up: bool = False,
    both_legs: bool = True,
) -> list[str]:
    """The flags of backend/confidence/answerability.py's docstring, in that order."""
    rule = policy.risk_flags
    flags = []
    # Across languages the missing terms are the other language's words, not another subject.
    if (
        not doc.cross_lingual
        and values["cosine_lift"] >= rule.lift_high
        and values["term_coverage"] < rule.coverage_low
    ):
        flags.append("low_coverage")
    if both_legs and (doc.vector_rank is None or doc.full_text_rank is None):
        flags.append("single_spike")
    total = None
    if chunk_totals is not None:
        total = chunk_totals.get(doc.parent_id)
        if total is None:
            total = next((v for k, v in chunk_totals.items() if str(k) == doc.parent_id), None)
    if total:
        ratio = doc.hit_chunks / max(total, doc.hit_chunks)
        if ratio < rule.sparse_ratio:
            flags.append("sparse_evidence")
        if total >= rule.huge_doc_chunks and ratio < rule.huge_doc_ratio:
            flags.append("huge_doc_sparse")
    if runner_up:
        flags.append("ambiguous_candidate")
    return flags


def _model(doc: DocumentEvidence, policy: AnswerabilityPolicy) -> str:
    """Which of the policy's models scores the document."""
    return "cross_lingual" if doc.cross_lingual and policy.cross_lingual is not None else "main"


def _name(doc: DocumentEvidence) -> str:
    return doc.title.strip().casefold() or doc.parent_id


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)
