"""The MCP server (issue 28): the tools search, ask, research, list_documents and get_document over the
existing services, as the caller - row-level security decides what an MCP client sees, as for the API.

Who the caller is depends on the transport, so the server is built with a `CallerOf`: over HTTP the
request's verified identity (backend/api/mcp.py), over stdio the identity resolved once at
start-up (backend/mcp_server/stdio.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from backend import __version__
from backend.auth.identity import Identity
from backend.chat.service import ChatRequest
from backend.composition import Services
from backend.mcp_server import descriptions as d
from backend.mcp_server import documents
from backend.mcp_server.errors import check_text, invalid_arguments, tool_errors
from backend.mcp_server.research import run_research
from backend.mcp_server.shapes import search_hit, sources
from backend.research.presets import PresetName
from backend.search.report import log_search_done
from backend.search.types import SearchRequest


@dataclass(frozen=True)
class Caller:
    services: Services
    identity: Identity
    # HTTP only: charges one request of a group ("search", "chat", "research") to the API's rate limits
    charge: Callable[[str], None] | None = None

    def spend(self, group: str) -> None:
        """One tool call is one request of `group` for the API's rate limits (HTTP; stdio is local)."""
        if self.charge is not None:
            self.charge(group)


SearchMode = Literal["hybrid", "vector", "fulltext"]
CallerOf = Callable[[Context], Caller]
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
STORES_A_TURN = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


class PgragMcpServer(MCPServer):
    """MCPServer whose answer to invalid arguments names each field and what is wrong with it, in one
    line (the SDK's is pydantic's multi-line text with a link)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(invalid_arguments(name, exc.__cause__)) from exc.__cause__
            raise


def create_mcp_server(caller_of: CallerOf) -> MCPServer:
    """The server with its five tools; each resolves its caller through `caller_of`."""
    server: MCPServer = PgragMcpServer(
        "pgrag",
        title="pgrag knowledge base",
        version=__version__,
        instructions=d.INSTRUCTIONS,
        # basicConfig when nothing configured logging yet: never louder than the default WARNING
        log_level="WARNING",
    )
    _add_question_tools(server, caller_of)
    _add_document_tools(server, caller_of)
    return server


def _add_question_tools(server: MCPServer, caller_of: CallerOf) -> None:
    """search, ask, research: each spends one request of its group's rate limit over HTTP."""

    @server.tool(description=d.SEARCH, annotations=READ_ONLY)
    async def search(
        query: Annotated[str, Field(description=d.SEARCH_QUERY, min_length=1, max_length=10_000)],
        ctx: Context,
        top_k: Annotated[int | None, Field(description=d.SEARCH_TOP_K, ge=1, le=50)] = None,
        filters: Annotated[dict[str, Any] | None, Field(description=d.SEARCH_FILTERS)] = None,
        mode: Annotated[SearchMode | None, Field(description=d.SEARCH_MODE)] = None,
        collections: Annotated[
            list[uuid.UUID] | None, Field(description=d.SEARCH_COLLECTIONS, min_length=1, max_length=100)
        ] = None,
    ) -> dict[str, Any]:
        with tool_errors("search"):
            check_text(query=query, filters=filters)
            caller = caller_of(ctx)
            caller.spend("search")
            request = SearchRequest(
                query=query, top_k=top_k, filters=filters, mode=mode, collections=collections
            )
            retrieval, identity = caller.services.retrieval, caller.identity
            result = await asyncio.to_thread(retrieval.search, request, identity=identity)
            log_search_done(result)
            where = result.diagnostics.where
            return {
                "query": result.query,
                "results": [search_hit(i, c) for i, c in enumerate(result.results, 1)],
                "matched_count": result.diagnostics.matched_count,
                "filters_applied": where.applied_where if where else (filters or {}),
                "scope": result.diagnostics.scope.model_dump(mode="json"),
            }

    @server.tool(description=d.ASK, annotations=STORES_A_TURN)
    async def ask(
        question: Annotated[str, Field(description=d.ASK_QUESTION, min_length=1, max_length=10_000)],
        ctx: Context,
        conversation_id: Annotated[uuid.UUID | None, Field(description=d.ASK_CONVERSATION)] = None,
    ) -> dict[str, Any]:
        with tool_errors("ask"):
            check_text(question=question)
            caller = caller_of(ctx)
            caller.spend("chat")
            request = ChatRequest(message=question, conversation_id=conversation_id)
            reply = await caller.services.chat.chat(request, identity=caller.identity)
            return {
                "answer": reply.answer,
                "sources": sources(reply.sources),
                "conversation_id": str(reply.conversation_id),
                "message_id": str(reply.message_id),
                "generator": reply.generator,
            }

    @server.tool(description=d.RESEARCH, annotations=STORES_A_TURN)
    async def research(
        question: Annotated[str, Field(description=d.RESEARCH_QUESTION, min_length=1, max_length=10_000)],
        ctx: Context,
        conversation_id: Annotated[uuid.UUID | None, Field(description=d.ASK_CONVERSATION)] = None,
        preset: Annotated[PresetName | None, Field(description=d.RESEARCH_PRESET)] = None,
    ) -> dict[str, Any]:
        with tool_errors("research"):
            check_text(question=question)
            caller = caller_of(ctx)
            caller.spend("research")
            return await run_research(
                caller.services.research,
                caller.identity,
                ctx,
                question=question,
                conversation_id=conversation_id,
                preset=preset,
            )


def _add_document_tools(server: MCPServer, caller_of: CallerOf) -> None:
    """list_documents, get_document: what the caller may read, under RLS."""

    @server.tool(description=d.LIST_DOCUMENTS, annotations=READ_ONLY)
    async def list_documents(
        ctx: Context,
        limit: Annotated[int, Field(description=d.LIST_LIMIT, ge=1, le=200)] = 20,
        offset: Annotated[int, Field(description=d.LIST_OFFSET, ge=0, le=1_000_000_000)] = 0,
    ) -> dict[str, Any]:
        with tool_errors("list_documents"):
            caller = caller_of(ctx)
            return await asyncio.to_thread(
                documents.list_page, caller.services.db, caller.identity, limit=limit, offset=offset
            )

    @server.tool(description=d.GET_DOCUMENT, annotations=READ_ONLY)
    async def get_document(
        document_id: Annotated[uuid.UUID, Field(description=d.GET_ID)],
        ctx: Context,
        from_position: Annotated[int, Field(description=d.GET_FROM, ge=0, le=10_000_000)] = 0,
        max_chars: Annotated[int, Field(description=d.GET_MAX_CHARS, ge=1000, le=100_000)] = 20_000,
    ) -> dict[str, Any]:
        with tool_errors("get_document"):
            caller = caller_of(ctx)
            return await asyncio.to_thread(
                documents.read,
                caller.services.db,
                caller.identity,
                document_id=document_id,
                from_position=from_position,
                max_chars=max_chars,
            )
