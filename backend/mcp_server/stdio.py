"""`python -m backend mcp`: the MCP server over stdio, as the identity PGRAG_API_KEY names.

An MCP client (Claude Desktop, Cursor, an agent) starts this process and speaks JSON-RPC on its stdin
and stdout. The caller is fixed for the process: PGRAG_API_KEY (a personal API key `pgr_...` or an
access token) is resolved by services.authenticator exactly as the API resolves an Authorization
header; with AUTH_MODE=none and no key, the local user. AUTH_MODE=supabase without a key, or a key
that is not accepted, refuses to start with a message on stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from backend.auth.identity import Identity
from backend.composition import Services, build_services
from backend.config import Settings
from backend.errors import Unauthorized
from backend.mcp_server.server import Caller, create_mcp_server


class StartupRefused(Exception):
    """Why the stdio server will not start (printed by the CLI, exit status 2)."""


def check_credentials(settings: Settings) -> str | None:
    """The Authorization header PGRAG_API_KEY stands for (None: no key); refuses supabase without one."""
    key = settings.pgrag_api_key.get_secret_value().strip() if settings.pgrag_api_key else ""
    if not key and settings.auth_mode == "supabase":
        raise StartupRefused(
            "AUTH_MODE=supabase: set PGRAG_API_KEY to a personal API key (pgr_..., from the chat page's "
            "'API keys' dialog or POST /api-keys) or an access token; the MCP server acts as that user"
        )
    return f"Bearer {key}" if key else None


def resolve_identity(services: Services, authorization: str | None) -> Identity:
    try:
        return services.authenticator.authenticate(authorization)
    except Unauthorized as exc:
        raise StartupRefused(f"PGRAG_API_KEY is not accepted: {exc}") from exc


def serve_stdio(settings: Settings) -> None:
    """Build the services (stdout kept clean for the protocol), resolve the caller, serve until EOF."""
    authorization = check_credentials(settings)
    with _stdout_to_stderr():  # the embedded server and migrations must not write on the protocol stream
        services = build_services(settings)
        try:
            services.authenticator.prepare()
            identity = resolve_identity(services, authorization)
        except BaseException:
            services.close()
            raise
    try:
        asyncio.run(_serve(services, identity))
    finally:
        services.close()


async def _serve(services: Services, identity: Identity) -> None:
    caller = Caller(services=services, identity=identity)
    server = create_mcp_server(lambda _ctx: caller)
    try:
        await server.run_stdio_async()
    finally:
        await services.web.aclose()  # the web clients belong to this event loop


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr for the block (child processes started in it keep stderr)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
