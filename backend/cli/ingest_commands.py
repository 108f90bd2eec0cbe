"""`ingest PATH... [--jsonl FILE]`: bulk ingestion with a progress bar and a summary."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from backend.config import get_settings
from backend.documents.ingestion import IngestionService
from backend.documents.outcomes import IngestSummary, ProgressCallback
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.loaders import load_path
from backend.ingest.sandbox import DEFAULT_LIMITS, ParseLimits


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ingest", help="ingest files, folders and BEIR-style .jsonl files")
    p.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="files or folders (.md .txt .html .pdf .docx .pptx .xlsx .csv .tsv .epub .jsonl)",
    )
    p.add_argument("--jsonl", action="append", type=Path, default=[], help="a BEIR corpus.jsonl (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
    p.add_argument(
        "--bulk",
        action="store_true",
        help="for initial and large loads: one transaction for the whole run; the HNSW and GIN indexes "
        "of chunks are dropped at the first write and rebuilt once at the end "
        "(INGEST_BULK_MAINTENANCE_WORK_MEM, INGEST_BULK_PARALLEL_WORKERS), term statistics refreshed "
        "once. Holds an ACCESS EXCLUSIVE lock on chunks until it commits: searches and other ingests "
        "wait for the whole run. Any failure rolls everything back (previous data and indexes stay). "
        "Rebuilding covers the whole table, so it pays when the load is large next to what is stored",
    )
    p.set_defaults(handler=run)
    register_reembed(sub)


def with_path_ids(items: Iterable[LoadedDocument | LoadFailure]) -> Iterator[LoadedDocument | LoadFailure]:
    """Files get a stable external_id and source: their path relative to the working directory
    (absolute when outside it), so `ingest docs/`, `ingest docs/a.md` and `ingest /abs/path/docs`
    (what `demo` does) name the same document the same way, and only an edited file is updated."""
    for item in items:
        if isinstance(item, LoadedDocument) and item.external_id is None and item.source:
            ident = path_id(Path(item.source))
            item = replace(item, external_id=ident, source=ident)
        yield item


def path_id(path: Path) -> str:
    """A file's or folder's name in external ids: relative to the working directory, else absolute."""
    cwd, path = Path.cwd().resolve(), path.resolve()
    return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) else path.as_posix()


def iter_inputs(
    paths: list[Path], limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[LoadedDocument | LoadFailure]:
    for path in paths:
        if not path.exists():
            yield LoadFailure(source=str(path), reason="no such file or folder")
            continue
        yield from with_path_ids(load_path(path, limits=limits))


def run(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.composition import build_services

    paths = list(args.paths) + list(args.jsonl)
    if not paths:
        raise CliError("nothing to ingest: give files, folders or --jsonl FILE")
    services = build_services(get_settings())
    try:
        summary = ingest_with_progress(
            services.ingestion,
            iter_inputs(paths, ParseLimits.from_settings(services.settings)),
            show=not args.no_progress,
            bulk=args.bulk,
        )
    finally:
        services.close()
    print_summary(summary)
    return 1 if summary.count("failed") else 0


@contextmanager
def progress_bar(*, show: bool) -> Iterator[ProgressCallback]:
    """A tqdm bar on stderr fed by IngestionService's progress callback: documents, chunks, chunks/s."""
    from tqdm import tqdm

    bar = tqdm(unit="doc", disable=not show, file=sys.stderr, dynamic_ncols=True)
    started = time.perf_counter()
    chunks = 0

    def progress(summary: IngestSummary, group_chunks: int) -> None:
        nonlocal chunks
        chunks += group_chunks
        bar.n = len(summary.outcomes)
        rate = chunks / max(time.perf_counter() - started, 1e-6)
        bar.set_postfix_str(f"{chunks} chunks, {rate:.1f} chunks/s, {summary.chunks_embedded} embedded")
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()


def ingest_with_progress(
    ingestion: IngestionService,
    items: Iterable[LoadedDocument | LoadFailure],
    *,
    show: bool,
    bulk: bool = False,
) -> IngestSummary:
    if bulk:
        print(
            "bulk mode: from the first write until the commit, searches wait; indexes are rebuilt at the end",
            file=sys.stderr,
        )
    with progress_bar(show=show) as progress:
        # The CLI is the admin path: it writes the shared corpus as the backend's own role (public).
        return ingestion.ingest(items, identity=None, bulk=bulk, on_progress=progress)


def print_summary(summary: IngestSummary) -> None:
    c = summary.counts
    print(
        f"documents: {c['created']} created, {c['updated']} updated, {c['unchanged']} unchanged, "
        f"{c['failed']} failed ({summary.seconds:.1f}s)"
    )
    print(f"chunks: {summary.chunks_embedded} embedded, {summary.chunks_from_cache} from the embedding cache")
    if summary.bulk:
        b = summary.bulk
        print(
            f"bulk: rebuilt {', '.join(b.deferred_indexes) or 'no indexes'} in {b.index_build_seconds:.1f}s; "
            f"term statistics refreshed in {b.term_stats_seconds:.1f}s, analyzed in {b.analyze_seconds:.1f}s"
        )
    for failure in summary.failures:
        print(f"  failed: {failure.external_id}: {failure.error}")


def register_reembed(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("reembed", help="re-embed chunks stored by another model with the current one")
    p.set_defaults(handler=run_reembed)


def run_reembed(args: argparse.Namespace) -> int:
    from backend.composition import build_services
    from backend.documents.reembed import reembed

    services = build_services(get_settings())
    try:
        summary = reembed(
            services.pool,
            services.embedder,
            batch_size=services.settings.ingest_embed_batch_size,
            on_progress=lambda s, total: print(f"  {s.chunks}/{total} chunks", file=sys.stderr),
        )
    finally:
        services.close()
    print(
        f"re-embedded {summary.chunks} chunks with {summary.model} "
        f"({summary.embedded} by the provider, {summary.chunks - summary.embedded} from the cache)"
    )
    return 0
