"""Documents: ingest (JSON, batch, file upload), list, read, delete."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, UploadFile, status
from fastapi.responses import JSONResponse

from backend.api.collection_schemas import DocumentPatch
from backend.api.deps import CurrentUser, ServicesDep
from backend.api.job_schemas import IngestJobAccepted
from backend.api.limits import IngestLimit
from backend.api.schemas import (
    MAX_OFFSET,
    DocumentIn,
    DocumentOut,
    DocumentPage,
    DocumentsBatchIn,
    DocumentTextOut,
    IngestOutcomeOut,
    IngestSummaryOut,
)
from backend.collections import service as collections_service
from backend.db.repositories.ingest_jobs import NewFile
from backend.documents import service as documents_service
from backend.documents.outcomes import IngestSummary
from backend.errors import InvalidInput, NotFound, PayloadTooLarge, UnsupportedDocument
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import as_version_of, load_bytes
from backend.ingest.sandbox import ParseLimits
from backend.jobs.files import BATCH_CONTENT_TYPE, encode_batch

router = APIRouter(prefix="/documents", tags=["documents"])
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"model": IngestJobAccepted, "description": "Queued as a background job (background=true)"}
}
Background = Query(
    False,
    description="Answer at once (202) with a job id instead of waiting for the embeddings; follow it at "
    "GET /ingest/jobs/{id} or its SSE stream /ingest/jobs/{id}/events",
)
MAX_TEXT_OFFSET = 1_000_000_000  # past any document (MAX_DOCUMENT_CHARS): keeps the SQL in int range


def _loaded(doc: DocumentIn) -> LoadedDocument:
    return LoadedDocument(
        title=doc.title,
        content=doc.content,
        source=doc.source,
        filename=None,
        content_type="text/markdown",
        external_id=doc.external_id,
        metadata=doc.metadata,
    )


def _summary(summary: IngestSummary) -> IngestSummaryOut:
    return IngestSummaryOut(
        counts=summary.counts,
        documents=[IngestOutcomeOut(**vars(o)) for o in summary.outcomes],
        chunks_embedded=summary.chunks_embedded,
        chunks_from_cache=summary.chunks_from_cache,
        seconds=round(summary.seconds, 3),
    )


@router.post(
    "",
    response_model=IngestSummaryOut,
    status_code=status.HTTP_200_OK,
    summary="Ingest one document (idempotent: unchanged content is a no-op)",
)
def create_document(
    body: DocumentIn, services: ServicesDep, user: CurrentUser, _: IngestLimit
) -> IngestSummaryOut:
    return _summary(
        services.ingestion.ingest(
            [_loaded(body)], identity=user, atomic=True, collection_id=body.collection_id
        )
    )


def _accepted(job: dict[str, object]) -> JSONResponse:
    return JSONResponse(IngestJobAccepted.of(job).model_dump(mode="json"), status_code=202)


@router.post(
    "/batch",
    response_model=IngestSummaryOut,
    responses=ACCEPTED,
    summary="Ingest many documents, all or nothing",
)
def create_documents(
    body: DocumentsBatchIn,
    services: ServicesDep,
    user: CurrentUser,
    _: IngestLimit,
    background: bool = Background,
) -> IngestSummaryOut | JSONResponse:
    documents = [_loaded(d) for d in body.documents]
    targets = {d.collection_id for d in body.documents if d.collection_id} | (
        {body.collection_id} if body.collection_id else set()
    )
    if len(targets) > 1:
        raise InvalidInput("a batch goes into one collection: give collection_id once, on the batch")
    collection_id = next(iter(targets), None)
    if background:  # one queued item: the batch stays all or nothing
        item = NewFile(f"batch of {len(documents)} documents", BATCH_CONTENT_TYPE, encode_batch(documents))
        return _accepted(
            services.jobs.submit(identity=user, kind="batch", files=[item], collection_id=collection_id)
        )
    return _summary(
        services.ingestion.ingest(documents, identity=user, atomic=True, collection_id=collection_id)
    )


def _read_upload(upload: UploadFile, limit: int) -> tuple[str, bytes]:
    data = upload.file.read(limit + 1)
    name = upload.filename or "upload"
    if len(data) > limit:
        raise PayloadTooLarge(f"{name} exceeds the limit of {limit} bytes (MAX_REQUEST_BYTES)")
    return name, data


@router.post(
    "/upload",
    response_model=IngestSummaryOut,
    responses=ACCEPTED,
    summary="Upload files (.md .txt .html .pdf .docx .pptx .xlsx .csv .tsv .epub .jsonl); each file "
    "succeeds or fails on its own",
)
def upload_documents(
    services: ServicesDep,
    user: CurrentUser,
    _: IngestLimit,
    files: Annotated[list[UploadFile], File()],
    collection_id: Annotated[uuid.UUID | None, Form()] = None,
    external_id: Annotated[
        str | None,
        Form(
            min_length=1,
            max_length=500,
            description="One file only: the document it is a new version of, updated in place (same id). "
            "Without it an upload is stored under its content's hash.",
        ),
    ] = None,
    background: bool = Background,
) -> IngestSummaryOut | JSONResponse:
    if external_id is not None and len(files) != 1:
        raise InvalidInput(f"external_id names one document: send one file with it, not {len(files)}")
    limit = services.settings.max_request_bytes
    read = [(_read_upload(upload, limit), upload.content_type) for upload in files]
    if background:  # parsed by the worker: a file that cannot be read fails there, with its reason
        queued = [NewFile(name, content_type, data, external_id) for (name, data), content_type in read]
        return _accepted(
            services.jobs.submit(identity=user, kind="upload", files=queued, collection_id=collection_id)
        )
    parse_limits = ParseLimits.from_settings(services.settings)
    items: list[LoadedDocument | LoadFailure] = []
    for (name, data), content_type in read:
        try:
            # a file past a parse limit (ParseLimitExceeded, 413) fails the request, as a too large one does
            items.extend(
                as_version_of(load_bytes(data, name, content_type, limits=parse_limits), external_id)
            )
        except UnsupportedDocument as exc:
            items.append(LoadFailure(source=name, reason=str(exc)))
    return _summary(
        services.ingestion.ingest(items, identity=user, atomic=False, collection_id=collection_id)
    )


@router.get("", response_model=DocumentPage, summary="Documents, most recently updated first")
def list_documents(
    services: ServicesDep,
    user: CurrentUser,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    collection_id: Annotated[
        uuid.UUID | None, Query(description="only this team collection's documents")
    ] = None,
    mine: Annotated[
        bool,
        Query(description="only the caller's own documents outside any collection (not the shared corpus)"),
    ] = False,
) -> DocumentPage:
    items, total = documents_service.list_documents(
        services.db, identity=user, limit=limit, offset=offset, collection_id=collection_id, mine=mine
    )
    return DocumentPage(items=[DocumentOut(**i) for i in items], total=total, limit=limit, offset=offset)


@router.get("/{document_id}", response_model=DocumentOut, summary="One document with its chunk count")
def get_document(document_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> DocumentOut:
    doc = documents_service.get_document(services.db, identity=user, document_id=document_id)
    if doc is None:
        raise NotFound(f"document {document_id} does not exist")
    return DocumentOut(**doc)


@router.get(
    "/{document_id}/text",
    response_model=DocumentTextOut,
    summary="A document's text around a passage (a source's provenance.char_start / char_end)",
)
def read_document_text(
    document_id: uuid.UUID,
    services: ServicesDep,
    user: CurrentUser,
    start: int = Query(ge=0, le=MAX_TEXT_OFFSET),
    end: int = Query(ge=0, le=MAX_TEXT_OFFSET),
    around: int = Query(400, ge=0, le=5000, description="characters shown before and after the passage"),
) -> DocumentTextOut:
    if end < start:
        raise InvalidInput("end must not be before start")
    window = documents_service.read_text(
        services.db, identity=user, document_id=document_id, start=start, end=end, around=around
    )
    return DocumentTextOut(
        document_id=document_id,
        start=window.start,
        end=window.end,
        text=window.text,
        passage_start=max(0, start - window.start),
        passage_end=max(0, min(end, window.end) - window.start),
    )


@router.patch(
    "/{document_id}",
    response_model=DocumentOut,
    summary="Put a document into a team collection, or take it out (collection_id null)",
)
def update_document(
    document_id: uuid.UUID, body: DocumentPatch, services: ServicesDep, user: CurrentUser
) -> DocumentOut:
    collections_service.move_document(
        services.db, identity=user, document_id=document_id, collection_id=body.collection_id
    )
    return get_document(document_id, services, user)


@router.delete(
    "/{document_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a document and its chunks"
)
def delete_document(document_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> None:
    documents_service.delete_document(services.db, identity=user, document_id=document_id)
