"""(d) Files per second per format, through the direct upload path and through a background job.

The same files (made here: Markdown, HTML, PDF, Word, PowerPoint, Excel, CSV, EPUB; --job-files of each,
each a different text so no content hash repeats) are ingested as one user, format by format, twice:
  direct      what POST /documents/upload does: load_bytes (the sandboxed parse) for every file, then
              one IngestionService.ingest of them all;
  background  what POST /documents/upload?background=true and one worker do: JobsService.submit (the
              bytes into ingest_job_files), then Worker.drain (claim, lease, read the body as the user,
              parse, ingest the file in one transaction, record progress and the outcome), until the job
              is done.
Each path writes into its own fresh database (cold embedding cache in both); for each format the direct
run goes first, then the background one, so other load on the machine falls on both alike. The ratio
background / direct is the job's overhead, measured in the same run.
"""

from __future__ import annotations

import time
import uuid
from contextlib import ExitStack
from typing import Any

from backend.auth.identity import user_identity
from backend.composition import Services
from backend.config import Settings
from backend.db.repositories.ingest_jobs import NewFile
from backend.documents.outcomes import IngestSummary
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_bytes
from backend.ingest.sandbox import ParseLimits
from backend.jobs.worker import Worker
from backend.testing.office_files import Block, Slide, make_docx, make_epub, make_pptx, make_xlsx
from backend.testing.pdfs import text_pdf
from bench.common import log
from bench.common.db import scratch_database, services
from bench.common.vectors import make_embedder

USER = user_identity(uuid.UUID("00000000-0000-4000-8000-00000000be7c"))
SENTENCE = "袋鼠生活在澳大利亚南部的岛屿上，以草为食。Kangaroos graze on the southern islands. "


def _file(kind: str, n: int) -> tuple[str, bytes]:
    """File n of a format: ~8,000 characters of text, its own number in every paragraph."""
    para = f"{n}: {SENTENCE * 4}"
    if kind == "md":
        return f"note{n}.md", "\n\n".join(
            [f"# Note {n}"] + [f"## Part {p}\n\n{para}" for p in range(20)]
        ).encode()
    if kind == "html":
        body = "".join(f"<h2>Part {p}</h2><p>{para}</p>" for p in range(20))
        return (
            f"page{n}.html",
            f"<html><head><title>Page {n}</title></head><body>{body}</body></html>".encode(),
        )
    if kind == "pdf":
        return f"paper{n}.pdf", text_pdf(
            [f"{n}: Kangaroos graze on the southern islands, page {p}." for p in range(4)]
        )
    if kind == "docx":
        blocks: list[Block] = []
        for p in range(10):
            blocks += [("Heading1", f"Part {p}"), para * 2, ("table", [["k", "v"], [str(n), SENTENCE]])]
        return f"report{n}.docx", make_docx(blocks)
    if kind == "pptx":
        slides: list[Slide] = [{"title": f"Slide {p}", "body": [para] * 2, "notes": para} for p in range(10)]
        return f"deck{n}.pptx", make_pptx(slides)
    rows: list[list[object]] = [["id", "region", "text"]]
    rows += [[i, f"region {n}", para] for i in range(40)]
    if kind == "xlsx":
        return f"sheet{n}.xlsx", make_xlsx({"Data": rows})
    if kind == "csv":
        return f"sheet{n}.csv", "\n".join(",".join(str(c) for c in row) for row in rows).encode()
    chapters = [(f"Chapter {p}", para * 2) for p in range(10)]
    return f"book{n}.epub", make_epub(chapters)


FORMATS = ("md", "html", "pdf", "docx", "pptx", "xlsx", "csv", "epub")


def direct(app: Services, files: list[tuple[str, bytes]]) -> IngestSummary:
    limits = ParseLimits.from_settings(app.settings)
    items: list[LoadedDocument | LoadFailure] = []
    for name, data in files:
        items.extend(load_bytes(data, name, None, limits=limits))
    return app.ingestion.ingest(items, identity=USER, atomic=False)


def background(app: Services, files: list[tuple[str, bytes]]) -> dict[str, Any]:
    job = app.jobs.submit(identity=USER, kind="upload", files=[NewFile(n, None, d) for n, d in files])
    Worker(app.db, app.ingestion, app.settings, name="bench").drain()
    return app.jobs.read_job(identity=USER, job_id=job["id"])


def job_overhead(settings: Settings, kind: str, per_format: int) -> dict[str, Any]:
    """Per format: files, chunks, seconds direct and in the background."""
    with ExitStack() as stack:
        apps = [
            stack.enter_context(
                services(
                    stack.enter_context(scratch_database(label)), settings, make_embedder(kind, settings)
                )
            )
            for label in ("ingest_direct", "ingest_jobs")
        ]
        for app in apps:
            app.embedder.embed_documents(["warm-up: load the model before the clock starts"])
            direct(app, [_file("csv", 999)])  # the sandbox's fork server starts before the clock too
        rows = [_measure(apps[0], apps[1], fmt, per_format) for fmt in FORMATS]
    return {"embedder": kind, "files_per_format": per_format, "formats": rows}


def _measure(direct_app: Services, job_app: Services, fmt: str, per_format: int) -> dict[str, Any]:
    files = [_file(fmt, n) for n in range(per_format)]
    started = time.perf_counter()
    summary = direct(direct_app, files)
    direct_s = time.perf_counter() - started
    started = time.perf_counter()
    job = background(job_app, files)
    job_s = time.perf_counter() - started
    if summary.count("failed") or job["counts"]["done"] != len(files):
        raise RuntimeError(f"{fmt}: not every file was stored ({summary.counts}, {job['counts']})")
    chunks = sum(o.chunks for o in summary.outcomes)
    if chunks != job["chunks_total"]:
        raise RuntimeError(
            f"{fmt}: the paths stored different chunk counts ({chunks}, {job['chunks_total']})"
        )
    log(f"  {fmt}: {len(files)} files, {chunks} chunks: direct {direct_s:.2f} s, job {job_s:.2f} s")
    return {"format": fmt, "files": len(files), "chunks": chunks, "direct_s": direct_s, "job_s": job_s}
