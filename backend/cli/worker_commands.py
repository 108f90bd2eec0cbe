"""`worker [--threads N] [--drain]`: work the background ingestion jobs (backend/jobs/worker.py)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from backend.config import get_settings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "worker",
        help="ingest the files of background jobs (uploads with background=true); run as many as you like",
        description="Claims queued files (FOR UPDATE SKIP LOCKED) and ingests each as the user who "
        "submitted its job (their role and claims: row-level security decides as for their request). "
        "Stops on SIGINT/SIGTERM; a file it was ingesting is retried by the next worker once its lease "
        "(INGEST_JOB_LEASE_S) runs out, and is never stored twice.",
    )
    p.add_argument("--threads", type=int, default=1, help="files ingested at once by this process (1)")
    p.add_argument("--drain", action="store_true", help="exit once no file is queued (scripts, CI)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.composition import build_services
    from backend.jobs.worker import Worker

    if not 1 <= args.threads <= 64:
        raise CliError("--threads must be between 1 and 64")
    services = build_services(get_settings())
    try:
        if args.drain:
            done = Worker(services.db, services.ingestion, services.settings).drain()
            print(f"processed {done} file(s); the queue is empty")
            return 0
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        threads = [
            threading.Thread(
                target=Worker(services.db, services.ingestion, services.settings).run, args=(stop,)
            )
            for _ in range(args.threads)
        ]
        for thread in threads:
            thread.start()
        print(f"worker: {args.threads} thread(s) working the ingestion queue; Ctrl-C stops", file=sys.stderr)
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(0.5)
    finally:
        services.close()
    return 0
