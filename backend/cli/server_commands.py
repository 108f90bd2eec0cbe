"""`serve` and `demo` (database + demo corpus + API in one command)."""

from __future__ import annotations

import argparse
import logging

from backend import PROJECT_ROOT
from backend.composition import Services
from backend.config import get_settings

DEMO_CORPUS = PROJECT_ROOT / "demo" / "corpus"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("serve", help="serve the HTTP API")
    s.add_argument("--host", default=None)
    s.add_argument("--port", type=int, default=None)
    s.set_defaults(handler=serve)
    d = sub.add_parser("demo", help="start the database, load the demo corpus, serve the API")
    d.add_argument("--host", default=None)
    d.add_argument("--port", type=int, default=None)
    d.add_argument("--no-serve", action="store_true", help="load the corpus and exit")
    d.set_defaults(handler=demo)


def serve(args: argparse.Namespace, services: Services | None = None) -> int:
    import uvicorn

    from backend.api.app import create_app
    from backend.composition import build_services

    settings = get_settings()
    configure_server_logging(settings.log_level)
    # Built before the server starts: a database that cannot be reached or is behind the code is a
    # one-line error here, not a traceback from inside the server's start-up.
    owned = services is None
    services = services or build_services(settings)
    host, port = args.host or settings.host, args.port or settings.port
    base = f"http://{host}:{port}"
    print(f"serving on {base}  (API docs: {base}/docs, MCP: {base}/mcp)", flush=True)
    try:
        uvicorn.run(
            create_app(services=services, settings=settings),
            host=host,
            port=port,
            log_level=settings.log_level.lower(),
        )
    finally:
        if owned:
            services.close()
    return 0


def configure_server_logging(level: str) -> None:
    """The backend's own log lines (retrieval done, failures) at LOG_LEVEL, each with its request id."""
    from backend.api.request_context import RequestIdLogFilter

    handler = logging.StreamHandler()
    handler.addFilter(RequestIdLogFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"))
    backend_logger = logging.getLogger("backend")
    backend_logger.handlers[:] = [handler]
    backend_logger.setLevel(level.upper())
    backend_logger.propagate = False


def demo(args: argparse.Namespace) -> int:
    from backend.cli.ingest_commands import ingest_with_progress, iter_inputs, print_summary
    from backend.composition import build_services
    from backend.ingest.sandbox import ParseLimits

    settings = get_settings()
    services = build_services(settings)
    where = (
        f"embedded PostgreSQL in {settings.embedded_db_dir.resolve()}"
        if settings.uses_embedded_db
        else "DATABASE_URL"
    )
    print(f"database: {where} (migrated)")
    print(f"embeddings: {services.embedder.model_id}; answers: {services.llm.generator}")
    print(f"loading the demo corpus from {DEMO_CORPUS.relative_to(PROJECT_ROOT)} ...", flush=True)
    limits = ParseLimits.from_settings(services.settings)
    summary = ingest_with_progress(services.ingestion, iter_inputs([DEMO_CORPUS], limits), show=True)
    print_summary(summary)
    if args.no_serve:
        services.close()
        return 0
    host, port = args.host or settings.host, args.port or settings.port
    print(f"\nopen the chat page: http://{host}:{port}/")
    print("or ask it:")
    print(
        f"  curl -s http://{host}:{port}/chat -H 'content-type: application/json' "
        '-d \'{"message": "三阶段检索分别做什么？"}\''
    )
    print(
        f"  curl -s http://{host}:{port}/search -H 'content-type: application/json' "
        '-d \'{"query": "how do I tune hybrid_search?"}\'\n'
    )
    try:
        return serve(args, services=services)
    finally:
        services.close()
