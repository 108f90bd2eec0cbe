"""The MCP server over streamable HTTP at /mcp of the API.

/mcp is an ordinary route of the app, so a request passes the same middleware (request id, body size,
metrics) and the same `CurrentUser` dependency as every other route: the Authorization header (an
access token, a personal API key `pgr_...` or the service key) is verified by services.authenticator,
and a missing or invalid one is a 401 before any MCP message is read. The route then hands the request
to the SDK's session manager, whose tools find the verified identity on the request.

Stateless: every POST is served on its own (no MCP session to keep, so any worker can answer it and a
credential is checked on every request); progress notifications stream on the POST's SSE response.
DNS-rebinding protection is left off as for the rest of the API (AUTH_MODE=supabase requires a Bearer
credential a browser never sends on its own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from fastapi import APIRouter, Request
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.api.deps import CurrentUser
from backend.api.limits import RouteGroup, spend
from backend.errors import DomainError
from backend.mcp_server.server import Caller, create_mcp_server

PATH = "/mcp"
router = APIRouter()


class McpUnavailable(DomainError):
    status_code = 503


class McpHttp:
    """The app's MCP server, running while the app's lifespan runs. A session manager runs only once, so
    each run of the lifespan (a test client entered twice, say) builds its own server and manager."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        server = create_mcp_server(http_caller)
        # Builds the session manager (the Starlette app it returns is not used: /mcp is our route).
        server.streamable_http_app(
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with server.session_manager.run():
            self._manager = server.session_manager
            try:
                yield
            finally:
                self._manager = None

    def handler(self) -> ASGIApp:
        if self._manager is None:
            raise McpUnavailable("the MCP server is not running (the app was started without its lifespan)")
        return self._manager.handle_request


def http_caller(ctx: Context) -> Caller:
    """The verified caller of the HTTP request that carries this tool call."""
    request = ctx.request_context.request
    identity = getattr(request.state, "identity", None) if isinstance(request, Request) else None
    if not isinstance(request, Request) or identity is None:  # not behind CurrentUser: refuse, never guess
        raise ToolError("no verified caller for this request")
    services = request.app.state.services

    def charge(group: str) -> None:  # one tool call is one request of its group for the rate limits
        spend(request, identity, services.settings, cast(RouteGroup, group))

    return Caller(services=services, identity=identity, charge=charge)


class _Delegate(Response):
    """A response that lets an ASGI app answer the request itself (the SDK's transport: JSON or SSE)."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__()
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


@router.api_route(PATH, methods=["GET", "POST", "DELETE"], include_in_schema=False)
async def mcp_endpoint(request: Request, user: CurrentUser) -> Response:
    """MCP over streamable HTTP, as the verified caller (`user` is also on request.state.identity)."""
    return _Delegate(request.app.state.mcp.handler())
