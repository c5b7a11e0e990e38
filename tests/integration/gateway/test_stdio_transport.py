"""The bounded stdio transport, fed by a real child process writing crafted JSON-RPC lines: lines at the limit pass,
longer ones are dropped without being held and answered as MESSAGE_TOO_LARGE for their request, and the reader
finds its way to the next line; a long line that names no request closes the connection."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from gateway.upstreams.stdio import MESSAGE_TOO_LARGE, READ_SIZE, bounded_stdio

LIMIT = 100_000


def _python_order(request: int, size: int) -> str:
    """A result as the Python SDK writes it (id first), `size` bytes long."""
    line = json.dumps({"jsonrpc": "2.0", "id": request, "result": {"text": ""}}, separators=(",", ":"))
    return line.replace('"text":""', '"text":"' + "p" * (size - len(line)) + '"')


def _typescript_order(request: int, size: int) -> str:
    """A result as the TypeScript SDK writes it (id last), `size` bytes long."""
    line = json.dumps({"result": {"text": ""}, "jsonrpc": "2.0", "id": request}, separators=(",", ":"))
    return line.replace('"text":""', '"text":"' + "t" * (size - len(line)) + '"')


def _received(lines: list[str], tmp_path: Path) -> list[Any]:
    """What the session receives from a process that writes `lines` and then waits for its stdin to close."""
    source = tmp_path / "lines.txt"
    source.write_text("".join(line + "\n" for line in lines))
    script = f"import sys; sys.stdout.write(open({str(source)!r}).read()); sys.stdout.flush(); sys.stdin.read()"
    params = StdioServerParameters(command=sys.executable, args=["-c", script])

    async def scenario() -> list[Any]:
        received: list[Any] = []
        async with bounded_stdio(params, LIMIT) as (from_server, _to_server):
            with anyio.fail_after(60):
                async for item in from_server:
                    received.append(item if isinstance(item, Exception) else item.message)
        return received

    return asyncio.run(scenario())


def test_lines_over_the_limit_fail_their_request_and_the_next_line_is_read(tmp_path: Path) -> None:
    lines = [
        '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
        _python_order(1, LIMIT),  # exactly at the limit: passed on
        _python_order(2, LIMIT + 1),
        _typescript_order(3, 3 * READ_SIZE + 17),  # spans several reads
        _typescript_order(4, 100),
        "not json",
        _python_order(5, 2 * LIMIT)[::-1],  # too long, names no request: the connection closes
        _python_order(6, 100),  # never reached
    ]
    received = _received(lines, tmp_path)
    assert isinstance(received[0], types.JSONRPCNotification)
    assert isinstance(received[1], types.JSONRPCResponse) and received[1].id == 1
    assert len(received[1].result["text"]) == LIMIT - len(_python_order(1, 0))
    for item, request, size in ((received[2], 2, LIMIT + 1), (received[3], 3, 3 * READ_SIZE + 17)):
        assert isinstance(item, types.JSONRPCError) and item.id == request
        assert item.error.code == MESSAGE_TOO_LARGE and f"answered {size} bytes" in item.error.message
    assert isinstance(received[4], types.JSONRPCResponse) and received[4].id == 4
    assert isinstance(received[5], ValueError)  # unparseable lines reach the session as errors, as with the SDK
    assert len(received) == 6


def test_the_server_process_is_gone_after_the_transport_closes(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    params = StdioServerParameters(command=sys.executable, args=["-c", script])  # ignores its stdin closing

    async def scenario() -> None:
        async with bounded_stdio(params, LIMIT):
            while not pid_file.exists() or not pid_file.read_text():  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert not Path(f"/proc/{pid_file.read_text()}").exists()
