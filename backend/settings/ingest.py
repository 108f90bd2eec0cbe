"""Ingestion: sizes, limits, chunking, the metadata a caller may attach, the parse sandbox.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from pydantic import BaseModel, Field

# Metadata keys a caller may attach to documents (the seed's whitelist, plus our ingest-time fields).
DEFAULT_METADATA_WHITELIST = (
    "doc_id",
    "source",
    "filename",
    "content_type",
    "media_type",
    "lang",
    "tags",
    "keyphrases",
    "created_at",
    "text_len",
    "too_short",
    "quality_score",
)


class IngestSettings(BaseModel):
    # --- ingestion -------------------------------------------------------------------------------
    chunk_size: int = Field(default=500, ge=50, description="Target characters per chunk.")
    chunk_overlap: int = Field(default=50, ge=0)
    chunk_min_chars: int = Field(default=20, ge=1, description="Below this a chunk is flagged too_short.")
    quality_sat_len: int = Field(default=200, ge=1)
    keyphrase_top_k: int = Field(default=10, ge=0)
    metadata_whitelist: list[str] = Field(default_factory=lambda: list(DEFAULT_METADATA_WHITELIST))
    filter_max_size: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="Conditions plus values (each element of a list counts) one request's filters may "
        "hold; more is a 422. Each value is checked on every chunk a search reads: ~0.6 us a row per "
        "value of an $in on a list field (tags), up to ~25,000 rows a search (README, Limits).",
    )
    max_document_chars: int = Field(default=2_000_000, ge=1)
    # PDF, HTML, CSV, Office and EPUB files (uploads, the CLI, web pages read in full) are parsed in a
    # child process with these bounds (backend/ingest/sandbox.py); past one, the file is refused naming
    # it (413).
    parse_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Wall-clock time one parse may take."
    )
    parse_memory_mb: int = Field(
        default=1024, ge=128, le=65536, description="Address space of the parsing process (RLIMIT_AS)."
    )
    pdf_max_pages: int = Field(default=2000, ge=1, description="Pages a PDF may have.")
    parse_max_unzipped_mb: int = Field(
        default=256,
        ge=1,
        le=65536,
        description="What a .docx, .pptx, .xlsx or .epub file (a zip archive) may unpack to, in MB, by "
        "the sizes its archive declares; more is refused before anything is unpacked (413).",
    )
    max_request_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    ingest_embed_batch_size: int = Field(default=64, ge=1)
    ingest_bulk_maintenance_work_mem: str = Field(
        default="1GB", description="maintenance_work_mem for the index rebuilds of `ingest --bulk`."
    )
    ingest_bulk_parallel_workers: int = Field(
        default=2, ge=0, le=64, description="max_parallel_maintenance_workers for those rebuilds."
    )
    # --- background ingestion jobs (POST /documents/upload?background=true, backend/jobs/) --------
    ingest_workers: int = Field(
        default=1,
        ge=0,
        le=16,
        description="Worker threads the API process runs for background ingestion jobs; 0: only "
        "`python -m backend worker` processes work them.",
    )
    ingest_worker_poll_s: float = Field(
        default=1.0, gt=0, le=60, description="How often an idle worker looks for queued files."
    )
    ingest_job_lease_s: float = Field(
        default=60.0,
        ge=1,
        le=3600,
        description="A worker's hold on the file it ingests, renewed every third of it; a file whose "
        "worker stopped is claimed again when its lease has run out.",
    )
    ingest_job_max_attempts: int = Field(
        default=3,
        ge=1,
        le=20,
        description="Claims of one file before it is failed (its workers kept stopping while on it).",
    )
    ingest_job_events_poll_s: float = Field(
        default=0.5, gt=0, le=30, description="How often GET /ingest/jobs/{id}/events reads the job."
    )
