"""Draining event-stream answers: against a real HTTP/1.1 server on a socket (crafted answers: the shapes a
server may send after its response event), with the gateway's HTTP client (the SDK's: it waits up to 5 minutes
for a read), closed after the response event as the SDK closes it. A finished answer keeps its connection; one
that goes on too long or forever is closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.upstreams.keepalive import DRAIN_MAX_BYTES, reuse_connections

EVENT = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class _Server:
    """Answers every request by `answer(reader, writer)`; counts its connections and notes when the client closed
    one."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.closed_by_client = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                await self.answer(reader, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed_by_client.set()
        finally:
            writer.close()


def _sized(padding: int) -> Answer:
    """The TypeScript SDK's shape: the whole stream with a Content-Length, here `padding` bytes of SSE comments
    after the response event."""
    body = EVENT + (b":" + b"p" * 1022 + b"\n") * (padding // 1024)

    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(SSE + b"Content-Length: %d\r\n\r\n" % len(body) + body)

    return answer


async def _endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A stream kept open after the response event, never ended: until the client goes."""
    writer.write(SSE + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(EVENT) + EVENT + b"\r\n")
    await writer.drain()
    while await reader.read(1024):
        pass


@asynccontextmanager
async def _serving(server: _Server) -> AsyncIterator[str]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        listener.close()


async def _post_until_response_event(client: httpx2.AsyncClient, url: str) -> None:
    """What the SDK does: read events up to the response, and close the answer right there."""
    async with client.stream("POST", url, json={}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                await response.aclose()
                return


async def _calls(answer: Answer, calls: int, drain: bool) -> _Server:
    server = _Server(answer)
    async with _serving(server) as url, create_mcp_http_client() as client:
        if drain:
            reuse_connections(client)
        for _ in range(calls):
            with anyio.fail_after(10):
                await _post_until_response_event(client, url)
    return server


@pytest.mark.parametrize(("drain", "connections"), [(True, 1), (False, 3)])
def test_a_finished_answer_leaves_its_connection_for_the_next_call(drain: bool, connections: int) -> None:
    server = asyncio.run(_calls(_sized(padding=0), 3, drain))
    assert server.connections == connections


@pytest.mark.parametrize(("padding", "connections"), [(DRAIN_MAX_BYTES // 2, 1), (DRAIN_MAX_BYTES * 16, 3)])
def test_a_long_remainder_is_not_read_the_connection_is_closed(padding: int, connections: int) -> None:
    server = asyncio.run(_calls(_sized(padding), 3, drain=True))
    assert server.connections == connections


def test_an_answer_that_never_ends_is_closed() -> None:
    async def scenario() -> None:
        server = _Server(_endless)
        async with _serving(server) as url, create_mcp_http_client() as client:
            reuse_connections(client)
            with anyio.fail_after(10):
                await _post_until_response_event(client, url)
                await server.closed_by_client.wait()

    asyncio.run(scenario())
