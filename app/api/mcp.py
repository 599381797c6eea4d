"""Recall over MCP (SPEC §17): the official SDK's server at `/mcp`, streamable HTTP.

Four tools over a session's store: `search_history` (full text, folded entries
included), `read_entries` (the originals of a seq range, bounded), `context_status`
(tokens, threshold, compactions) and `compact`. Same API keys and tenants as the REST
API: every request is authenticated here before the SDK sees it, and each tool resolves
the tenant from the request's own (already checked) key.

Stateless HTTP with JSON answers: nothing of an MCP session lives in the process, so any
replica answers any request (SPEC §6: stateless apart from the database).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from app import __version__
from app.api.auth import DEFAULT_TENANT, tenant_of_key
from app.api.mappers.recall import search_out
from app.api.mappers.sessions import compaction_out, context_out
from app.api.problems import problem_response
from app.api.state import AppState
from app.engine.errors import CompactorError

MCP_PATH = "/mcp"
# read_entries answers at most this many originals per call (an agent pages on).
MAX_READ_ENTRIES = 50
_INSTRUCTIONS = (
    "Recall for agents whose context was compacted: the full transcript of every session "
    "is kept. search_history finds entries (folded ones included) by words, a phrase, "
    "prefix*, -excluded or a OR b; read_entries returns the originals of a seq range; "
    "context_status tells how full the context is; compact folds the older part now."
)


class McpEndpoint:
    """The SDK's streamable HTTP handler of one app lifespan run, behind our API keys."""

    def __init__(self, server: MCPServer, api_keys: dict[str, str]) -> None:
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            # The app's HostAllowList already refused hosts it does not answer to.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._manager = server.session_manager
        self._keys = api_keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._keys and _tenant_of_headers(self._keys, _headers(scope)) is None:
            answer = problem_response(
                401, "Unauthorized", "send Authorization: Bearer <api key>", "unauthorized"
            )
            answer.headers["WWW-Authenticate"] = "Bearer"
            await answer(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpEndpoint]:
        """The SDK's task group for the lifespan run."""
        async with self._manager.run():
            yield self


class McpRoute:
    """Hands `/mcp` to the lifespan's MCP endpoint (404 through the app when it is off)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            scope["path"] == MCP_PATH or scope["path"].startswith(MCP_PATH + "/")
        ):
            endpoint = scope.get("state", {}).get("mcp")
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)


@asynccontextmanager
async def mcp_serving(state: AppState) -> AsyncIterator[McpEndpoint | None]:
    """The MCP endpoint while the block runs; None when COMPACTOR_MCP is off."""
    if not state.settings.mcp:
        yield None
        return
    endpoint = McpEndpoint(recall_server(state), state.api_keys)
    async with endpoint.running():
        yield endpoint


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _tenant_of_headers(keys: dict[str, str], headers: Mapping[str, str]) -> str | None:
    scheme, _, presented = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        return None
    return tenant_of_key(keys, presented)


def recall_server(state: AppState) -> MCPServer:
    """The MCP server with the four recall tools over `state`'s sessions."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    server: MCPServer = MCPServer(
        "context-compactor", version=__version__, instructions=_INSTRUCTIONS, log_level="WARNING"
    )
    # The SDK calls logging.basicConfig (a rich handler on the root logger) when nothing
    # configured logging yet; the service's log lines are configured by the service.
    root.handlers[:] = handlers
    root.setLevel(level)
    sessions = state.sessions

    def tenant(ctx: Context) -> str:
        if not state.api_keys:
            return DEFAULT_TENANT
        found = _tenant_of_headers(state.api_keys, ctx.headers or {})
        if found is None:  # the endpoint checked the key; a transport without headers
            raise ToolError("send Authorization: Bearer <api key>")
        return found

    async def call(fn: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args))
        except CompactorError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    async def search_history(
        ctx: Context, session_id: str, query: str, limit: int = 10
    ) -> dict[str, Any]:
        """Search the session's full transcript, entries folded away by compaction
        included: words (all must match), "a phrase", prefix*, -excluded, a OR b. Each
        hit has the entry's seq (read it whole with read_entries), role, a snippet,
        whether it is folded, and its rank."""
        result = await call(sessions.search, tenant(ctx), session_id, query, limit)
        return search_out(query, result).model_dump(mode="json")

    @server.tool()
    async def read_entries(
        ctx: Context, session_id: str, from_seq: int, to_seq: int
    ) -> dict[str, Any]:
        """The original transcript entries from_seq..to_seq (inclusive, at most 50), exactly
        as they were received."""
        if from_seq < 0 or to_seq < from_seq:
            raise ToolError("from_seq must be ≥ 0 and to_seq ≥ from_seq")
        count = min(to_seq - from_seq + 1, MAX_READ_ENTRIES)
        messages, total = await call(sessions.transcript, tenant(ctx), session_id, from_seq, count)
        return {
            "from_seq": from_seq,
            "to_seq": from_seq + len(messages) - 1,
            "total": total,
            "truncated": len(messages) < to_seq - from_seq + 1 and from_seq + count < total,
            "entries": [{"seq": from_seq + i, "message": m} for i, m in enumerate(messages)],
        }

    @server.tool()
    async def context_status(ctx: Context, session_id: str) -> dict[str, Any]:
        """How full the session's context is: tokens now, the threshold, the window, whether
        it should compact, and how many entries and compactions it has."""
        who = tenant(ctx)
        session = await call(sessions.get, who, session_id)
        estimate = context_out(await call(sessions.context, who, session_id)).estimate
        return {
            "session_id": session_id,
            "tokens": estimate.tokens,
            "threshold": estimate.threshold,
            "context_window": estimate.context_window,
            "should_compact": estimate.should_compact,
            "entries": session.entry_count,
            "compactions": session.compaction_count,
        }

    @server.tool()
    async def compact(
        ctx: Context, session_id: str, instructions: str | None = None
    ) -> dict[str, Any]:
        """Compact the session now (a manual compaction), with optional instructions for
        what the summary must keep. Nothing is deleted: search_history still finds it."""
        try:
            result = await sessions.compact(tenant(ctx), session_id, "manual", instructions, None)
        except CompactorError as exc:
            raise ToolError(str(exc)) from exc
        record = result.record
        return {
            "compacted": result.compacted,
            "compaction": compaction_out(record).model_dump(mode="json") if record else None,
            "tokens": context_out(result.view).estimate.tokens,
        }

    return server
