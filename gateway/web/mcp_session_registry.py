"""The MCP-session registry of both HTTP front doors: the cluster's (gateway/cluster/people/front_door.py) and
`mcpexec serve --http` (mcpexec/local/serve.py). Each MCP session (the protocol's, named by its `Mcp-Session-Id`)
is served by one session of the door's (an AgentSession, or a local sandbox), kept here by that id.

- A session is opened on its MCP session's first tool call. Concurrent first calls share the opening; one that fails
  is forgotten (the next call tries again); a caller that gives up leaves it running for the next call.
- It is ended when the client deletes the MCP session. An MCP session without a tool call for IDLE_SECONDS (the SDK
  forgets it at the same age) is dropped by the one reaper, which runs with the app's lifespan: its session is ended
  too, unless the door leaves that to the session's own idle timeout.
- Every request of an MCP session (its tool calls, its stream, its DELETE) must come from whoever opened it: the
  door's `admit` names the caller (the cluster's: namespace, pool and user of the path and token; the local door's:
  no one, it has one user), the `initialize` answer that gives the MCP session its id binds the id to that caller,
  and a request with the id from anyone else is answered 404 `not_found`, as an id never given out is (an id learned
  elsewhere reveals and ends nothing). A DELETE ends the session only once the transport accepted it (2xx).
- Only the handshake era of the protocol has MCP sessions: a request without an `Mcp-Session-Id` that is not
  `initialize` is refused, on both doors alike. A stateless (2026-07-28) request, known by its
  `Mcp-Protocol-Version`, gets 400 and a JSON-RPC error (-32600) that names the handshake, before any MCP is spoken,
  so a client that tries that era first falls back to `initialize`; a handshake-era one gets the SDK's 400
  (`Missing session ID`). This was `mcpexec serve`'s rule; the cluster's door used to serve stateless requests and
  refuse only their tool calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import GatewayError, NotFound
from gateway.executions.models import MAX_TIMEOUT_SECONDS

S = TypeVar("S")

MCP_SESSION_HEADER = "mcp-session-id"
_SESSION_HEADER_BYTES = MCP_SESSION_HEADER.encode()
PROTOCOL_HEADER = "mcp-protocol-version"
# An MCP session no tool call has used for this long is dropped (the SDK forgets it at the same age): longer than the
# longest execution, which is one request.
IDLE_SECONDS = MAX_TIMEOUT_SECONDS + 600
REAP_EVERY_SECONDS = 30.0
INVALID_REQUEST = -32600
# A door's checks before any MCP is spoken: the request's path and headers (names in lower case) -> who is asking
# (what an MCP session is bound to); a GatewayError refuses it with the contract's error body.
Admit = Callable[[str, dict[str, str]], Awaitable[Hashable]]


@dataclass
class _Owner:
    caller: Hashable
    seen: float


def mcp_session_request(ctx: Context) -> tuple[Request, str]:
    """The HTTP request of a tool call, and its MCP session's id."""
    request = ctx.request_context.request
    key = request.headers.get(MCP_SESSION_HEADER) if isinstance(request, Request) else None
    if not isinstance(request, Request) or not key:
        raise ToolError("no MCP session: connect with the initialize handshake, which gives one")
    return request, key


def _stateless_refusal(version: str) -> JSONResponse:
    refusal = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": INVALID_REQUEST,
            "message": "this server keeps a sandbox per MCP session: use the initialize handshake "
            f"(protocol {HANDSHAKE_PROTOCOL_VERSIONS[-1]}), not stateless {version} requests",
        },
    }
    return JSONResponse(refusal, status_code=400)


class McpSessionRegistry(Generic[S]):
    """The session of each MCP session, by its id. `end(session, reason)` ends one; `end_idle`: whether a session
    whose MCP session idled out is ended too (a local sandbox), or only forgotten (an AgentSession, which its own idle
    timeout ends)."""

    def __init__(self, end: Callable[[S, str], Awaitable[None]], end_idle: bool = True) -> None:
        self._end = end
        self._end_idle = end_idle
        self._opened: dict[str, asyncio.Future[S]] = {}
        self._used: dict[str, float] = {}  # when each MCP session last called a tool
        self._owners: dict[str, _Owner] = {}  # who opened each MCP session, and when it last sent a request

    async def session(self, key: str, opening: Callable[[], Awaitable[S]]) -> S:
        """The session of MCP session `key`, opened by `opening` on its first call."""
        self._used[key] = time.monotonic()
        opened = self._opened.get(key)
        if opened is None:  # concurrent first calls of one MCP session share its session
            opened = self._opened[key] = asyncio.ensure_future(opening())
        try:  # shielded: a caller that gives up leaves the opening to the MCP session's next call (or its end)
            return await asyncio.shield(opened)
        except Exception:
            if self._opened.get(key) is opened:  # it never became a session: the next call tries again
                del self._opened[key]
            raise

    async def end(self, key: str, reason: str) -> None:
        """MCP session `key` is over: its session is ended, if it ever opened."""
        self._used.pop(key, None)
        opened = self._opened.pop(key, None)
        if opened is None:
            return
        try:
            session = await opened
        except Exception:  # it never became a session (its caller was told why): nothing to end
            return
        await self._end(session, reason)

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_SECONDS)
            gone = time.monotonic() - IDLE_SECONDS
            self._owners = {key: owner for key, owner in self._owners.items() if owner.seen > gone}
            idle = [key for key, used in self._used.items() if time.monotonic() - used > IDLE_SECONDS]
            for key in idle:
                if self._end_idle:
                    await self.end(key, f"the MCP session was idle for {IDLE_SECONDS:g} s")
                else:
                    self._used.pop(key, None)
                    self._opened.pop(key, None)

    def app(self, inner: ASGIApp, admit: Admit | None = None) -> ASGIApp:
        """`inner` (the SDK's streamable HTTP app) behind the door's checks (`admit`) and the stateless rule; a
        deleted MCP session's session ended; the reaper running while the app's lifespan does."""

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "lifespan":
                reaper = asyncio.create_task(self._reap_forever(), name="mcp-session-reaper")
                try:
                    await inner(scope, receive, send)
                finally:
                    reaper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reaper
                return
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            try:
                caller = None if admit is None else await admit(scope["path"], headers)
                key = headers.get(MCP_SESSION_HEADER)
                if key is not None:
                    self._check_owner(key, caller)
            except GatewayError as exc:
                body: dict[str, Any] = exc.response().model_dump()
                await JSONResponse(body, status_code=exc.status)(scope, receive, send)
                return
            version = headers.get(PROTOCOL_HEADER)
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                await _stateless_refusal(version)(scope, receive, send)
                return
            answer: dict[str, Any] = {}

            async def watched(message: Message) -> None:
                if message["type"] == "http.response.start":
                    answer["status"] = message["status"]
                    named = [v for n, v in message.get("headers", []) if n.lower() == _SESSION_HEADER_BYTES]
                    answer["key"] = named[0].decode("latin-1") if named else None
                await send(message)

            await inner(scope, receive, watched)
            accepted = 200 <= answer.get("status", 500) < 300
            if key is None and accepted and answer.get("key"):  # an initialize: the new MCP session is the caller's
                self._owners[answer["key"]] = _Owner(caller, time.monotonic())
            if scope["method"] == "DELETE" and key and accepted:
                self._owners.pop(key, None)
                await self.end(key, "the MCP client deleted the session")

        return app

    def _check_owner(self, key: str, caller: Hashable) -> None:
        """A request naming MCP session `key` comes from the caller it was opened by (NotFound otherwise)."""
        owner = self._owners.get(key)
        if owner is None or owner.caller != caller:
            raise NotFound("no such MCP session for this caller: connect with the initialize handshake")
        owner.seen = time.monotonic()
