"""Request and response bodies (with examples for the OpenAPI page)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.api.collection_schemas import ChatCollections, Collections
from backend.chat.diagnostics import ChatDiagnostics
from backend.confidence.routing import Route
from backend.search.diagnostics import SearchDiagnostics, WebDiagnostics

RerankerName = Literal["heuristic", "jina", "cohere"]
RERANKER_DESCRIPTION = (
    "What orders the candidates: heuristic (the rerank policy, default: RERANK_DEFAULT) or the model "
    "reranker configured by RERANK_PROVIDER (jina or cohere); one that is not configured is a 422. A "
    "model reranker that fails or times out leaves the heuristic order (diagnostics.reranker says so)."
)
MAX_OFFSET = 1_000_000_000  # pagination offsets beyond this are nonsense (and PostgreSQL's bigint has an end)

INFER_FILTERS_DESCRIPTION = (
    "true: read filters in the question and add them to `filters` (docs/where.md): time (近一周, 上个月, "
    "去年, 2023年5月, last week, since March, before 2024 -> created_at / updated_at), language (英文资料, "
    "documents in English -> lang), file or media type (PDF文件 -> content_type, when your documents have "
    "it), tags (a known tag named, or #tag), quality (质量>=0.8, 高质量 -> quality_score). Your own "
    "`filters` win on the same field. The words that only set a filter are left out of the searched "
    "text. Rules, or Gemini structured output when configured (rules on any failure)."
)
RELAX_DESCRIPTION = (
    "When the inferred filters leave nothing, search once more without them (diagnostics.where.relaxed). "
    "Your own `filters` are never relaxed. null: WHERE_RELAX_ENABLED (default true)."
)
MIN_SCORE_DESCRIPTION = (
    "Drop results whose `score` is below this, in [0, 1]. score = (1 + cosine of question and chunk) / 2 "
    "in every mode and with every reranker (docs/scores.md). When it removes everything, "
    "diagnostics.empty_reason is min_score."
)


class DocumentIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "title": "尤金袋鼠",
                    "content": "尤金袋鼠是袋鼠科中细小的成员，分布在澳洲南部岛屿及西岸地区。",
                    "external_id": "wiki-tammar-wallaby",
                    "source": "wikipedia",
                    "metadata": {"tags": ["动物"]},
                }
            ]
        },
    )

    title: str = Field(default="", max_length=1000)
    content: str = Field(min_length=1)
    external_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="Your id; re-posting the same id updates the document.",
    )
    source: str = Field(default="api", max_length=1000)
    metadata: dict[str, Any] = Field(default_factory=dict, description="Whitelisted keys only.")
    collection_id: uuid.UUID | None = Field(
        default=None,
        description="put it into this team collection (you must be one of its editors); re-posting an "
        "external_id the collection holds re-ingests that document, whoever owns it",
    )


class DocumentsBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn] = Field(min_length=1, max_length=1000)
    collection_id: uuid.UUID | None = Field(
        default=None,
        description="put every document into this team collection (you must be one of its editors)",
    )


class IngestOutcomeOut(BaseModel):
    external_id: str
    title: str
    status: Literal["created", "updated", "unchanged", "failed"]
    document_id: uuid.UUID | None
    chunks: int
    error: str | None = None


class IngestSummaryOut(BaseModel):
    counts: dict[str, int]
    documents: list[IngestOutcomeOut]
    chunks_embedded: int
    chunks_from_cache: int
    seconds: float


class DocumentOut(BaseModel):
    id: uuid.UUID
    external_id: str
    title: str
    source: str
    content_hash: str
    metadata: dict[str, Any]
    visibility: Literal["private", "public"] = Field(
        description="private: only its owner sees it; public: every signed-in user (the shared corpus)"
    )
    owner_id: uuid.UUID | None = Field(description="the user who owns it; null for the shared corpus")
    collection_id: uuid.UUID | None = Field(
        default=None, description="the team collection it is shared in (its members read it); null: none"
    )
    chunk_count: int
    created_at: datetime
    updated_at: datetime
    embedding_models: list[str] | None = None


class DocumentPage(BaseModel):
    items: list[DocumentOut]
    total: int
    limit: int
    offset: int


FILTERS_DESCRIPTION = """Which chunks may be found, applied inside the SQL search (README: Filters).

Fields: the metadata whitelist (METADATA_WHITELIST: lang, tags, keyphrases, source, doc_id, filename,
content_type, media_type, text_len, quality_score, too_short) and the document's dates `created_at` /
`updated_at` (ISO 8601 dates or timestamps; a date alone is its whole UTC day; no zone means UTC).

* `{"lang": "zh"}` equals (`$eq` shorthand); `{"tags": ["a", "b"]}` holds both (`$contains`)
* operators: `$eq` `$ne` `$in` `$nin` `$gt` `$gte` `$lt` `$lte` `$exists` `$contains`;
  several on one field all apply: `{"text_len": {"$gte": 200, "$lt": 2000}}`
* `$and` / `$or` take lists of filters, `$not` one; they nest; keys side by side all apply
* on a list field (tags, keyphrases) `$eq`/`$in` mean "has that tag"/"has any", `$ne`/`$nin` "has none"

An unknown field or operator, or a value of the wrong type, is a 422 naming it."""

FILTER_EXAMPLES: list[dict[str, Any]] = [
    {"lang": "zh", "tags": ["发票"]},
    {"created_at": {"$gte": "2025-01-01"}, "tags": {"$in": ["报销", "发票"]}},
    {"$or": [{"source": "wiki"}, {"quality_score": {"$gte": 0.8}}], "too_short": False},
    {"updated_at": {"$gte": "2025-03-01T00:00:00+08:00"}, "source": {"$exists": True}},
]


class SearchIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "query": "尤金袋鼠分布在哪些地区？",
                    "top_k": 5,
                    "mode": "hybrid",
                    "dynamic": True,
                    "filters": {"lang": "zh"},
                },
                {
                    "query": "去年的发票报销流程",
                    "filters": {
                        "created_at": {"$gte": "2024-01-01", "$lt": "2025-01-01"},
                        "$or": [{"tags": "发票"}, {"keyphrases": {"$in": ["报销", "发票"]}}],
                    },
                },
            ]
        },
    )

    query: str = Field(min_length=1, max_length=10_000)
    top_k: int | None = Field(
        default=None, ge=1, description="Overrides RAG_TOP_K_MAX; at most SEARCH_MAX_TOP_K (100 by default)."
    )
    mode: Literal["hybrid", "vector", "fulltext"] | None = None
    dynamic: bool = Field(default=True, description="false: exactly top_k ranked results (evaluation).")
    filters: dict[str, Any] | None = Field(
        default=None, description=FILTERS_DESCRIPTION, examples=FILTER_EXAMPLES
    )
    web: bool | Literal["auto"] = Field(
        default="auto",
        description="auto: web results only when the documents do not hold the answer; true: always; "
        "false: never. Needs WEB_SEARCH_PROVIDER.",
    )
    collections: Collections = None
    infer_filters: bool = Field(default=False, description=INFER_FILTERS_DESCRIPTION)
    relax: bool | None = Field(default=None, description=RELAX_DESCRIPTION)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0, description=MIN_SCORE_DESCRIPTION)
    reranker: RerankerName | None = Field(default=None, description=RERANKER_DESCRIPTION)


class SearchHit(BaseModel):
    chunk_id: int
    document_id: uuid.UUID
    external_id: str
    title: str
    heading: str
    content: str
    metadata: dict[str, Any]
    provenance: dict[str, Any] | None = Field(
        default=None,
        description="where the passage came from: char_start/char_end in the document's text, and where the "
        "file has them page_start/page_end (PDF, Word), slide_start/slide_end (PowerPoint), sheet and "
        'row_start/row_end (Excel, CSV), chapter/chapter_title (EPUB); label says it briefly ("p. 12", '
        '"slide 4", "Sales, rows 10–20"). null for web pages and passages stored before it was recorded',
    )
    score: float | None = Field(
        description="closeness in meaning to the question in [0, 1]: (1 + cosine) / 2; the same scale in "
        "every mode and with every reranker, so one min_score fits all queries (docs/scores.md). The "
        "order of results is the reranker's, which also weighs keywords. null only when the chunk has no "
        "embedding in the query's model"
    )
    scores: dict[str, Any] = Field(
        description="the raw ranking features: cosine (similarity), ranks, RRF, BM25, rerank and final "
        "scores (final_score orders the results; its scale depends on the rerank policy)"
    )


class WebHitOut(BaseModel):
    """One web result (deduplicated against the local results)."""

    url: str
    title: str
    content: str = Field(description="the provider's snippet, or the page's text when it was read")
    provider: str
    score: float | None = Field(description="the provider's own relevance score (not comparable across)")
    fetched_at: datetime
    published_date: str | None = None

    @classmethod
    def from_result(cls, hit: Any) -> WebHitOut:
        return cls(
            url=hit.url,
            title=hit.title,
            content=hit.text,
            provider=hit.provider,
            score=hit.score,
            fetched_at=hit.fetched_at,
            published_date=hit.published_date,
        )


class SearchOut(BaseModel):
    query: str
    mode: str
    results: list[SearchHit]
    route: Route = Field(description="what the confidence says the results are good for (see /chat)")
    web: list[WebHitOut] = Field(default_factory=list, description="web results, when a web search ran")
    applied_where: dict[str, Any] = Field(
        default_factory=dict,
        description="the filter the results were found with: your filters AND the inferred ones (after any "
        "relax); diagnostics.where says which part is which",
    )
    matched_count: int = Field(
        default=0,
        description="candidate chunks found inside applied_where before rerank, the top-k cut and min_score "
        "(at most the prefetch size, diagnostics.parameters.prefetch_k); 0: nothing in the filtered scope "
        "matched",
    )
    diagnostics: SearchDiagnostics
    web_diagnostics: WebDiagnostics | None = Field(default=None, description="the web leg, when one ran")


class ChatIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"message": "pgrag 的检索分哪三个阶段？"},
                {"message": "hybrid_search 有哪些参数？", "filters": {"tags": ["sql"]}, "step_top_k": 8},
                {"message": "那它的作者是谁？", "conversation_id": "0b7c6f1e-8d1a-4c5e-9a57-2f1d1c7e9b10"},
            ]
        },
    )

    message: str = Field(min_length=1, max_length=10_000)
    conversation_id: uuid.UUID | None = None
    stream: bool = Field(default=False, description="true: Server-Sent Events (delta events, then done).")
    mode: Literal["hybrid", "vector", "fulltext"] | None = Field(default=None, description="default: hybrid")
    filters: dict[str, Any] | None = Field(
        default=None,
        description="applied to every search of this turn; the grammar of /search:\n\n" + FILTERS_DESCRIPTION,
        examples=FILTER_EXAMPLES,
    )
    web: bool | Literal["auto"] = Field(
        default="auto",
        description="auto: search the web only when the documents do not hold the answer; true: always "
        "(in parallel with the documents); false: never. Needs WEB_SEARCH_PROVIDER.",
    )
    collections: ChatCollections = None
    infer_filters: bool = Field(default=False, description=INFER_FILTERS_DESCRIPTION)
    relax: bool | None = Field(default=None, description=RELAX_DESCRIPTION)
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description=MIN_SCORE_DESCRIPTION + " Applies to every search of the turn.",
    )
    top_k: int | None = Field(default=None, ge=1, description="retrieval budget (LOCAL_TOP_K)")
    step_top_k: int | None = Field(default=None, ge=1, description="most evidence chunks kept (STEP_TOP_K)")
    write_top_k: int | None = Field(default=None, ge=1, description="evidence the model sees (WRITE_TOP_K)")
    reranker: RerankerName | None = Field(default=None, description=RERANKER_DESCRIPTION)


class SourceOut(BaseModel):
    """One numbered source of an answer, as stored in messages.sources."""

    model_config = ConfigDict(extra="allow")
    n: int
    kind: Literal["local", "web"] = Field(default="local", description="a chunk of a document, or a web page")
    chunk_id: int | None = Field(description="the chunk (local sources); null for web pages")
    document_id: str | None = Field(description="its document (local sources); null for web pages")
    external_id: str = Field(description="the document's external id, or the web page's canonical URL")
    title: str
    heading: str
    snippet: str
    cited: bool = Field(description="whether the answer cites it")
    in_context: bool = Field(default=True, description="whether the model saw it (false: related, uncited)")
    content_hash: str = Field(description="sha256 of the chunk or passage text it was built from")
    why: dict[str, Any] = Field(description="ranks, RRF score, rerank features and final score")
    url: str | None = Field(default=None, description="web sources: the page")
    provider: str | None = Field(default=None, description="web sources: the search provider")
    fetched_at: datetime | None = Field(default=None, description="web sources: when it was fetched")
    provenance: dict[str, Any] | None = Field(
        default=None,
        description="where the passage came from: char_start/char_end in the document's text, and where the "
        "file has them page_start/page_end (PDF, Word), slide_start/slide_end (PowerPoint), sheet and "
        'row_start/row_end (Excel, CSV), chapter/chapter_title (EPUB); label says it briefly ("p. 12", '
        '"slide 4", "Sales, rows 10–20"). null for web pages and passages stored before it was recorded',
    )


class StoredSourceOut(SourceOut):
    stale: bool = Field(description="the document was since changed or deleted: this text is gone")
    stale_reason: str | None = None
    deleted: bool = Field(
        default=False,
        description="the document was deleted: its passage, title, heading and ids were erased from this "
        "record (the number stays, so the answer's [n] still resolves)",
    )


class ChatOut(BaseModel):
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    answer: str
    generator: str
    sources: list[SourceOut]
    diagnostics: ChatDiagnostics


class ConversationOut(BaseModel):
    id: uuid.UUID
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int
    collections: list[uuid.UUID] | None = Field(
        default=None, description="the team collections it searches; null: everything you may read"
    )


class MessageOut(BaseModel):
    id: uuid.UUID
    role: str
    content: str
    sources: list[StoredSourceOut]
    metadata: dict[str, Any]
    created_at: datetime


class ClientFeaturesOut(BaseModel):
    research: bool = Field(description="POST /research (deep research with live progress) is served")
    web: bool = Field(description="a web search provider is configured (chat's web option does something)")


class ClientConfigOut(BaseModel):
    """What a browser client (the chat page at /) needs before its first call. Nothing secret."""

    version: str
    auth_mode: Literal["none", "supabase"] = Field(description="supabase: send a Supabase access token")
    supabase_url: str | None = Field(description="the project URL to sign in at (AUTH_MODE=supabase)")
    supabase_anon_key: str | None = Field(description="the project's public anon key, for Supabase Auth")
    max_message_chars: int = Field(description="longest /chat message accepted (MAX_QUERY_CHARS)")
    features: ClientFeaturesOut


class DocumentTextOut(BaseModel):
    """A stretch of a document's text around a passage (a source's provenance char_start/char_end)."""

    document_id: uuid.UUID
    start: int = Field(description="where `text` starts in the document's text")
    end: int = Field(description="where it ends (exclusive)")
    text: str
    passage_start: int = Field(description="where the asked passage starts inside `text`")
    passage_end: int = Field(description="where it ends inside `text` (exclusive)")
