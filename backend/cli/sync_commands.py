"""`sync DIR | --urls FILE [--name NAME] [--delete] [--apply]`: make the store match a folder or URLs."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from pathlib import Path

from backend.config import get_settings
from backend.documents.sync import SyncReport
from backend.documents.sync_sources import SyncItem

SHOWN = 20  # entries listed per kind; the counts are always complete


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sync",
        help="make the shared corpus match a folder (or a URL list): a dry run unless --apply",
        description="Compares a folder's files (or a URL list's pages) with what is stored under "
        "external ids NAME/<path relative to the folder> (or NAME/<url>): new and changed ones are "
        "ingested, unchanged ones skipped (content hash), vanished ones removed with --delete. Without "
        "--apply nothing is written. Writes the shared corpus as the backend's own role, like `ingest`. "
        "Rerunning after an interruption continues where it stopped.",
    )
    p.add_argument("folder", nargs="?", type=Path, help="the folder to mirror")
    p.add_argument("--urls", type=Path, help="a file of URLs, one a line (# comments), instead of a folder")
    p.add_argument(
        "--name",
        help="the source's name, the prefix of its external ids (default: the folder's path as `ingest` "
        "names it - relative to the working directory, else absolute - so a folder loaded with `ingest` "
        "is recognised; for --urls the file's name without its suffix)",
    )
    p.add_argument("--delete", action="store_true", help="remove stored documents whose file or URL is gone")
    p.add_argument("--apply", action="store_true", help="make the changes (default: only show them)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.cli.ingest_commands import path_id, progress_bar
    from backend.composition import build_services
    from backend.documents.sync import sync
    from backend.documents.sync_sources import folder_items, read_url_list, url_items
    from backend.ingest.sandbox import ParseLimits

    if (args.folder is None) == (args.urls is None):
        raise CliError("give a folder or --urls FILE (one of them)")
    if args.folder is not None and not args.folder.is_dir():
        raise CliError(f"{args.folder} is not a folder")
    name = (args.name or (path_id(args.folder) if args.folder is not None else args.urls.stem)).strip("/")
    if not name or name == ".":
        raise CliError("--name must not be empty (sync a folder below the working directory, or name it)")
    prefix = f"{name}/"
    settings = get_settings()
    urls = read_url_list(args.urls) if args.urls is not None else []
    services = build_services(settings)
    try:
        items: Iterable[SyncItem] = (
            asyncio.run(url_items(urls, prefix, services.settings))
            if args.urls is not None
            else folder_items(args.folder, prefix, ParseLimits.from_settings(services.settings))
        )
        with progress_bar(show=args.apply and not args.no_progress) as progress:
            # The CLI is the admin path: the shared corpus, as the backend's own role (like `ingest`).
            report = sync(
                services.ingestion,
                services.db,
                items,
                prefix=prefix,
                identity=None,
                delete=args.delete,
                apply=args.apply,
                on_progress=progress,
            )
    finally:
        services.close()
    print_report(report)
    return 1 if report.failed else 0


def print_report(report: SyncReport) -> None:
    verb = "" if report.applied else "would be "
    for label, names in (
        (f"{verb}added", report.added),
        (f"{verb}updated", report.updated),
        (f"{verb}removed", report.removed),
    ):
        for ident in names[:SHOWN]:
            print(f"  {label}: {ident}")
        if len(names) > SHOWN:
            print(f"  ... and {len(names) - SHOWN} more {label}")
    for ident, reason in report.failed:
        print(f"  failed: {ident}: {reason}")
    print(
        f"{verb}added {len(report.added)}, {verb}updated {len(report.updated)}, "
        f"skipped {len(report.unchanged)} unchanged, {verb}removed {len(report.removed)}, "
        f"failed {len(report.failed)}"
    )
    if report.vanished_kept:
        kept = len(report.vanished_kept)
        print(f"{kept} stored document(s) no longer in the source kept (--delete removes them)")
    if not report.applied and report.changes:
        print("dry run: nothing was written; add --apply to make these changes", file=sys.stderr)
