"""`mcp`: the MCP server over stdio (backend/mcp_server/stdio.py); over HTTP it is /mcp of `serve`."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser(
        "mcp",
        help="serve the MCP tools over stdio for an MCP client (acts as PGRAG_API_KEY's user)",
        description="The MCP server over stdin/stdout: tools search, ask, research, list_documents, "
        "get_document. With AUTH_MODE=supabase set PGRAG_API_KEY (a personal API key); with "
        "AUTH_MODE=none it acts as the local user. Over HTTP the same tools are at /mcp of `serve`.",
    )
    m.set_defaults(handler=mcp)


def mcp(args: argparse.Namespace) -> int:
    from backend.cli.errors import CliError
    from backend.config import get_settings
    from backend.mcp_server.stdio import StartupRefused, serve_stdio

    try:
        serve_stdio(get_settings())
    except StartupRefused as exc:
        raise CliError(str(exc)) from exc
    return 0
