"""What each stage of a chat turn did, as typed data: returned by the services, shown in /docs.

Field descriptions are the documentation a web-app developer reads in the OpenAPI page, so each one
says what the number means, not how it is computed internally.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.confidence.routing import ChatRoute, Route
from backend.search.diagnostics import SearchDiagnostics, WebDiagnostics


class _Diag(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- /chat --------------------------------------------------------------------------------------


class RewriteDiagnostics(_Diag):
    query: str = Field(description="the self-contained query that was searched")
    method: Literal["unchanged", "llm", "heuristic", "ellipsis"] = Field(
        description="unchanged (no history, or self-contained), llm (rewritten by the model), heuristic (a "
        "pronoun replaced by the previous turn's subject) or ellipsis (searched after the previous query)"
    )


class BudgetOut(_Diag):
    local_top_k: int = Field(description="the retrieval budget of one chat turn")
    step_k: int = Field(description="most evidence chunks one turn keeps after fusion")
    write_k: int = Field(description="evidence chunks that enter the model's context")
    actual_recall: int = Field(description="candidates asked of the database by the main search")
    local_recall_k: int = Field(description="main-search chunks handed to fusion after the local rerank")


class PoolFusionOut(_Diag):
    """fuse_pools_with_gap_protection's report (evidence-retention.md, section 四)."""

    main_in: int
    gap_in: int
    total_reranked: int
    rank_pool_k: int
    rank_pool_multiplier: float
    gap_deficit_before_fill: int
    gap_backfill_ranked: int
    gap_backfill_unranked: int
    gap_min_keep: int = Field(description="the gap quota actually enforced")
    gap_in_output: int
    output_count: int
    top_k: int
    gap_ratio: float
    gap_min_keep_desired: int
    duplicates_dropped: int = Field(description="candidates found by both pools, counted once as main")
    reranker_dropped: int


class GapDiagnostics(_Diag):
    """Gap searches (when the evidence is scarce) and the one fusion that protects what the main search
    missed: gap-search chunks and web passages share the protected pool."""

    triggered: bool = Field(description="whether gap searches ran")
    reason: str | None = Field(description="why the evidence counted as scarce; null when it did not")
    queries: list[str] = Field(default_factory=list, description="the gap searches that were run")
    method: Literal["llm", "keywords", "none"] | None = None
    top_k: int | None = None
    failed: list[str] = Field(default_factory=list, description="gap searches that failed (logged)")
    pool_fusion: PoolFusionOut | None = None


class TruncationDiagnostics(_Diag):
    by: Literal["dynamic_top_k", "pool_fusion"] = Field(description="the one step that truncated")
    kept: int
    of: int


class RelevanceDiagnostics(_Diag):
    kept: int = Field(description="evidence chunks that passed the relevance gate")
    dropped: int


AttemptKind = Literal["original", "keywords", "other_language", "no_inferred_filter"]


class AttemptOut(_Diag):
    """One search of the second chance (the first search is the attempt "original")."""

    kind: AttemptKind = Field(
        description="original (the question as asked), keywords (its content words only), other_language "
        "(translated by the model), no_inferred_filter (the question without the filters read in it)"
    )
    query: str = Field(description="the text searched")
    infer_filters: bool = Field(description="whether filters were read in the query")
    best_overall_score: float | None = Field(description="its confidence score (null: the search failed)")
    confidence_level: Literal["low", "medium", "high"] | None = None
    weak: bool | None = Field(default=None, description="its confidence routes away from the documents")
    ms: float = Field(description="wall time of the attempt (the translation included)")
    error: str | None = Field(default=None, description="why the attempt failed (the turn went on)")


class SecondChanceDiagnostics(_Diag):
    """A second chance before "not found": when the first search is weak, the question is reformulated
    once and searched again before routing; the attempt with the best confidence score is kept."""

    triggered: bool = Field(description="whether the first search was weak and reformulations ran")
    reason: str | None = Field(default=None, description="why the first search counted as weak")
    attempts: list[AttemptOut] = Field(
        default_factory=list, description="every search tried, the first search first"
    )
    skipped: list[str] = Field(default_factory=list, description="reformulations not tried, and why")
    chosen: AttemptKind = Field(
        default="original", description="the attempt the turn went on with (original unless one beat it)"
    )


class EvidenceOptionsOut(_Diag):
    """The retrieval options this chat turn ran with (request values, else settings)."""

    mode: Literal["hybrid", "vector", "fulltext"]
    filters: dict[str, Any] = Field(description="metadata filter applied to every search of the turn")
    top_k: int = Field(description="the turn's retrieval budget (local_top_k)")
    step_top_k: int = Field(description="most evidence chunks the turn keeps")
    write_top_k: int = Field(description="evidence chunks the model sees")


class EvidenceDiagnostics(_Diag):
    options: EvidenceOptionsOut
    route: Route = Field(
        description="answer from the documents; clarify (two relevant documents compete); web_fallback "
        "(the documents do not hold the answer: web evidence only); not_in_documents (the same, with no "
        "web search for this request: the reply says so)"
    )
    budget: BudgetOut
    gap: GapDiagnostics
    truncation: TruncationDiagnostics
    relevance: RelevanceDiagnostics
    second_chance: SecondChanceDiagnostics = Field(
        default_factory=lambda: SecondChanceDiagnostics(triggered=False),
        description="the reformulated searches run before routing when the first search was weak",
    )


class ConfidenceSummary(_Diag):
    confidence_level: Literal["low", "medium", "high"]
    best_overall_score: float
    need_hitl: bool = Field(description="two candidate documents compete: clarify rather than guess")
    web_fallback: bool = Field(description="the documents likely do not answer the question")
    score_ratio: float | None = Field(
        description="runner-up document score / best score (the runner-up: the next document scored by the "
        "same model as the best, v6 on)"
    )


DropReason = Literal["duplicate", "near_duplicate", "budget"]


class ContextDropOut(_Diag):
    """An evidence chunk that did not enter the model's context, and why."""

    chunk_id: int
    title: str
    reason: DropReason = Field(
        description="duplicate (same text as a better source), near_duplicate (MinHash similarity or "
        "containment >= CONTEXT_NEAR_DUPLICATE_THRESHOLD), budget (no room left)"
    )
    tokens: int | None = Field(default=None, description="what it would have cost (budget drops)")
    duplicate_of: int | None = Field(default=None, description="the kept chunk it repeats")
    similarity: float | None = Field(default=None, description="estimated similarity to that chunk")


class ContextDiagnostics(_Diag):
    sources: int = Field(description="sources in the model's context, numbered [1..sources]")
    extra_sources: int = Field(description="further evidence numbered after them (citable, not shown)")
    used_tokens: int = Field(description="tokens of the sources in the context")
    budget_tokens: int = Field(description="CONTEXT_MAX_TOKENS: prompt, sources and reply together")
    dropped_duplicates: int
    truncated: int = Field(description="sources shortened to fit the token budget")
    dropped_for_budget: int
    reply_reserve_tokens: int = Field(default=0, description="CONTEXT_REPLY_TOKENS kept for the answer")
    prompt_tokens: int = Field(default=0, description="instructions, history and question, as counted")
    available_tokens: int = Field(
        default=0, description="room for sources: budget - reply reserve - prompt (may be < 0)"
    )
    dropped_near_duplicates: int = 0
    counter: Literal["gemini", "estimate"] = Field(
        default="estimate",
        description="gemini: the model's count-tokens API; estimate: the calibrated character estimate",
    )
    counted: dict[str, int] = Field(
        default_factory=dict, description="texts counted by the API, from its cache, or estimated"
    )
    counter_error: str | None = Field(
        default=None, description="why texts were estimated although the API counter is configured"
    )
    dropped: list[ContextDropOut] = Field(default_factory=list, description="what was left out, and why")
    ms: float = 0.0


class CitationDiagnostics(_Diag):
    valid: list[int] = Field(description="source numbers the answer cites")
    invalid_removed: int = Field(description="markers that pointed at no source and were removed")


class ShortAnswerOut(_Diag):
    text: str = Field(description="the normalised answer: a name, a date, a number with its unit")
    kind: Literal["who", "when", "number", "entity"]


class ToolCallOut(_Diag):
    tool: Literal["search_local", "search_web", "search_scholar", "search_ncbi"]
    query: str
    sources: list[int] = Field(default_factory=list, description="source numbers [n] the call added")
    error: str | None = Field(default=None, description="why the call failed (the answer went on without)")


TurnKind = Literal["question", "followup", "conversational", "instruction"]


class ChatDiagnostics(_Diag):
    route: ChatRoute = Field(
        description="what the turn did: answer / clarify / web_fallback / not_in_documents (after a "
        "search, as evidence.route), conversational (small talk or a question about the assistant: a "
        "short reply, nothing searched) or instruction (rework the previous answer: 展开说说, shorter "
        "please, translate that — its sources re-cited, nothing searched)"
    )
    model_verdict: Literal["declined"] | None = Field(
        default=None,
        description="declined: the model's answer cited nothing and said the documents do not hold the "
        "answer (a near miss the score took for an answer): the route is then not_in_documents",
    )
    turn: TurnKind = Field(
        description="question; followup (a question resolved against the conversation: rewrite says "
        "how); conversational; instruction"
    )
    intent: str | None = Field(
        default=None,
        description="conversational: greeting / thanks / goodbye / identity / capabilities; instruction: "
        "expand / shorter / to_english / to_chinese / translate",
    )
    rewrite: RewriteDiagnostics | None = Field(description="the searched query (null: nothing searched)")
    retrieval: SearchDiagnostics | None = Field(
        description="the main search, as /search reports it (null: nothing searched)"
    )
    evidence: EvidenceDiagnostics | None = Field(description="null: nothing searched")
    web: WebDiagnostics | None = Field(default=None, description="the web leg, when one ran")
    tool_calls: list[ToolCallOut] = Field(
        default_factory=list,
        description="assist mode: each search the model ran while answering (tool, query, source numbers)",
    )
    confidence: ConfidenceSummary | None = Field(description="null: nothing searched")
    context: ContextDiagnostics | None = Field(description="null: nothing searched")
    citations: CitationDiagnostics
    clarify: bool = Field(description="the reply asks which document the user means")
    short_answer: ShortAnswerOut | None = Field(
        default=None,
        description="a question that asks one thing (who, when, how many, which): the thing, taken from "
        "the answer and its cited sources without a model call; null otherwise",
    )
    generator: str = Field(
        description="gemini, extractive or scripted (an answer); clarify (a question back); not_found "
        "(the documents do not hold the answer and nothing else did: no model was asked); "
        "conversational (a fixed small-talk reply); needs_model (an instruction that needs a language "
        "model, none configured); nothing_to_rework (an instruction about an answer none of whose "
        "sources can still be read)"
    )
    llm: str | None = Field(description="the model that wrote the answer, if one did")
    total_ms: float = 0.0
