"""The stdio transport to the MCP servers a gateway runs: the SDK's `stdio_client`, but linear and bounded.

The SDK's reader joins each 64 KiB chunk to all it holds of the line so far, so a message costs time quadratic
in its size, on the event loop every task's calls share: reading a 10 MB file with server-filesystem (a 20 MB
answer: text and structuredContent) took 1.1 s of CPU against 0.04 s here, a 40 MB file 36 s (make bench
large_results). This reader costs linear time and never holds more than `max_message_bytes` of a line. Past
that, the rest of the line is read and dropped; if the line is an answer whose id shows in its first or last
bytes (Python servers write `{"jsonrpc":"2.0","id":7,"result":...`, TypeScript ones
`{"result":...,"jsonrpc":"2.0","id":7}`), that one request fails with MESSAGE_TOO_LARGE and the server keeps
running; otherwise the connection is closed, as the TypeScript SDK's stdio transport does past its 10 MiB buffer.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

log = logging.getLogger("mcpexec.gateway.stdio")

# A JSON-RPC implementation-defined server error code: the server's answer to one request was over the limit.
MESSAGE_TOO_LARGE = -32_050
READ_SIZE = 1 << 20
GRACE_SECONDS = 2.0  # after stdin closes, before the process group is terminated (then killed), as the SDK does
_EDGE = 256  # bytes kept of each end of a line too long to hold
_PYTHON_ORDER = re.compile(rb'\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+)\s*,\s*"(?:result|error)"')
_TYPESCRIPT_START = re.compile(rb'\{\s*"(?:result|error)"\s*:')
_TYPESCRIPT_END = re.compile(rb'"id"\s*:\s*(-?\d+)\s*\}\s*$')

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


def answered_id(head: bytes, tail: bytes) -> int | None:
    """The id of the answer a line is, from its first and last bytes, where its first or last member says so.
    The last `"id":N` before the final brace of a valid JSON object is always one of its own members."""
    if match := _PYTHON_ORDER.match(head):
        return int(match.group(1))
    if _TYPESCRIPT_START.match(head) and (match := _TYPESCRIPT_END.search(tail)):
        return int(match.group(1))
    return None


def _parse(line: bytearray) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # handed to the client, as the SDK's transport does
        return exc


class _Oversized:
    """A line past the limit: its first and last bytes and its length, counted as the rest is dropped."""

    def __init__(self, held: bytearray) -> None:
        self.head, self.tail, self.size = bytes(held[:_EDGE]), bytes(held[-_EDGE:]), len(held)

    def add(self, piece: bytearray) -> None:
        self.tail = (self.tail + piece[-_EDGE:])[-_EDGE:]
        self.size += len(piece)


async def _read(process: Process, limit: int, to_client: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """Line by line; at most `limit` bytes of a line, plus one read, are ever held."""
    assert process.stdout is not None
    buffer, scanned = bytearray(), 0
    oversized: _Oversized | None = None
    async with to_client:
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                buffer += await process.stdout.receive(READ_SIZE)
                while (end := buffer.find(b"\n", scanned)) != -1:
                    line = buffer[:end]
                    del buffer[: end + 1]  # deleting from the front of a bytearray moves no bytes
                    scanned = 0
                    if oversized is not None:
                        oversized.add(line)
                        cut, oversized = oversized, None
                    elif len(line) > limit:
                        cut = _Oversized(line)
                    else:
                        await to_client.send(_parse(line))
                        continue
                    if not await _refuse(cut, limit, to_client):
                        return
                scanned = len(buffer)
                if buffer and (oversized is not None or len(buffer) > limit):
                    if oversized is None:
                        oversized = _Oversized(buffer)
                    else:
                        oversized.add(buffer)
                    buffer.clear()
                    scanned = 0


async def _refuse(line: _Oversized, limit: int, to_client: MemoryObjectSendStream[SessionMessage | Exception]) -> bool:
    """Fail the request a too-long line answered; False when it cannot be told, and the connection must close."""
    request = answered_id(line.head, line.tail)
    log.warning("mcp message over the limit", extra={"bytes": line.size, "limit": limit, "request": request})
    if request is None:
        return False
    error = types.ErrorData(
        code=MESSAGE_TOO_LARGE, message=f"the server answered {line.size} bytes, over the gateway's limit of {limit}"
    )
    await to_client.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request, error=error)))
    return True


async def _write(
    process: Process,
    from_client: MemoryObjectReceiveStream[SessionMessage],
    to_client: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert process.stdin is not None
    try:
        async with from_client:
            async for message in from_client:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(line.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await to_client.aclose()  # the server stopped reading: the client sees the connection end


async def _exited(process: Process) -> bool:
    """Polls the return code (not `wait()`, which also waits for the pipes of children that inherited them)."""
    with anyio.move_on_after(GRACE_SECONDS):
        while process.returncode is None:  # noqa: ASYNC110 - nothing signals an exit code to wait on
            await anyio.sleep(0.01)
    return process.returncode is not None


async def _stop(process: Process) -> None:
    """Close stdin (the MCP way to ask a stdio server to exit), then terminate and kill its process group."""
    assert process.stdin is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process):
        await terminate_posix_process_tree(process, GRACE_SECONDS)
        if not await _exited(process):
            log.warning("mcp server survived the kill", extra={"pid": process.pid})
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError), anyio.move_on_after(GRACE_SECONDS):
        await process.aclose()


@asynccontextmanager
async def bounded_stdio(params: StdioServerParameters, max_message_bytes: int) -> AsyncIterator[Streams]:
    """A `Transport` for `mcp.Client`: the server's process in its own process group, lines of at most
    `max_message_bytes`."""
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        stderr=sys.stderr,
        start_new_session=True,
    )
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process, max_message_bytes, to_client)
        tasks.start_soon(_write, process, from_client, to_client)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):
                await to_server.aclose()
                await _stop(process)
            tasks.cancel_scope.cancel()  # a reader still blocked on a pipe a surviving child holds open
    await from_server.aclose()
