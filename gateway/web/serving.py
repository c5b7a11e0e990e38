"""Serving the app with uvicorn as a task of an already running event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

from gateway.web.bounded_http import BoundedHttpToolsProtocol

# uvicorn's C HTTP/1.1 parser (httptools), with bounds on request heads and connections (bounded_http.py); a class,
# so a missing package fails at start instead of silently falling back to the pure-Python h11 implementation.
HTTP = BoundedHttpToolsProtocol


class _EmbeddedServer(uvicorn.Server):
    """Leaves signal handling to the host program (`mcpexec run` owns Ctrl-C)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class BackgroundServer:
    def __init__(
        self,
        app: ASGIApp,
        *,
        uds: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        lifespan: Literal["on", "off"] = "off",
    ) -> None:
        """`lifespan="on"` for an app with startup work of its own (the MCP front door's MCP-session manager)."""
        config = uvicorn.Config(app, uds=uds, host=host, port=port, log_level="warning", lifespan=lifespan, http=HTTP)
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Returns once the socket accepts connections; raises if uvicorn could not start."""
        self._task = asyncio.create_task(self._server.serve(), name="gateway-http")
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("gateway HTTP server exited before it started")
            await asyncio.sleep(0.01)

    @property
    def port(self) -> int:
        """The bound TCP port (useful with port=0)."""
        sockets = [s for server in self._server.servers for s in server.sockets]
        return int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        await self._task
        self._task = None
