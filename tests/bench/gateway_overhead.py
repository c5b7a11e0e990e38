"""Gateway overhead: the same tool call (server-everything `echo`) through the gateway vs a direct MCP session.

Both sides use one long-lived MCP session to the same kind of server process; the gateway runs in its own
process on a Unix socket (as `mcpexec run` serves the sandbox), with its per-task session, auth, policy,
schema check and PII scan on the path. Figures: p50/p99 latency and calls/s at concurrency 1, 16 and 64,
and the CPU milliseconds each process (load client, gateway, MCP server) spent per call: on a small machine
all three share the cores, so calls/s alone does not say which of them is the bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gateway.local import LocalGateway
from gateway.settings import Limits
from mcpexec.agenttask import MCPServerSpec
from tests.gateway.conftest import GatewayThread, make_task
from tests.support.components import reference_server_commands

LEVELS = (1, 16, 64)
CALLS = {1: 300, 16: 800, 64: 1200}
WARMUP = 50
MESSAGE = {"message": "benchmark payload: order 1234 shipped to the warehouse"}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Every descendant of `pid` (the MCP server processes, under npx's wrapper)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            child = int(stat.parent.name)
            found += [child, *_children(child)]
    return found


def _cpu_of(processes: dict[str, list[int]]) -> dict[str, float]:
    return {name: sum(_cpu_seconds(pid) for pid in pids) for name, pids in processes.items()}


async def _measure(
    call: Callable[[], Awaitable[Any]], concurrency: int, total: int, processes: dict[str, list[int]]
) -> dict[str, Any]:
    for _ in range(WARMUP):
        await call()
    cpu_before = _cpu_of(processes)
    latencies: list[float] = []
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    cpu_after = _cpu_of(processes)
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
        "calls_per_s": round(len(ordered) / elapsed, 1),
        "cpu_ms_per_call": {n: round((cpu_after[n] - cpu_before[n]) * 1000 / len(ordered), 3) for n in processes},
    }


async def _direct(command: list[str]) -> dict[int, dict[str, Any]]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode="legacy", cache=None) as client:

        async def call() -> Any:
            return await client.call_tool("echo", MESSAGE)

        processes = {"client": [os.getpid()], "mcp_server": _children(os.getpid())}
        return {c: await _measure(call, c, CALLS[c], processes) for c in LEVELS}


async def _through_gateway(socket_path: Path, token: str, gateway_pid: int) -> dict[int, dict[str, Any]]:
    transport = httpx.AsyncHTTPTransport(uds=str(socket_path))
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://gateway", headers={"Authorization": f"Bearer {token}"}, limits=limits
    ) as http:

        async def call() -> Any:
            answer = await http.post("/v1/tools/everything/echo/call", json={"arguments": MESSAGE})
            answer.raise_for_status()

        await call()  # the task's session to the MCP server is opened on first use
        processes = {"client": [os.getpid()], "gateway": [gateway_pid], "mcp_server": _children(gateway_pid)}
        return {c: await _measure(call, c, CALLS[c], processes) for c in LEVELS}


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-") as tmp:
        command = reference_server_commands(Path(tmp))["everything"]
        direct = asyncio.run(_direct(command))
        socket_path = Path(tmp) / "gw.sock"
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.gateway_overhead", str(socket_path), json.dumps(command)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            token = server.stdout.readline().strip()
            via = asyncio.run(_through_gateway(socket_path, token, server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "tool": "everything/echo",
        "direct": {str(c): direct[c] for c in LEVELS},
        "gateway": {str(c): via[c] for c in LEVELS},
        "p50_overhead_ms": {str(c): round(via[c]["p50_ms"] - direct[c]["p50_ms"], 3) for c in LEVELS},
        "throughput_ratio": {str(c): round(via[c]["calls_per_s"] / direct[c]["calls_per_s"], 3) for c in LEVELS},
        # What one gateway process costs per call against what the MCP server itself costs, at full load.
        "gateway_to_server_cpu_ratio": round(
            via[64]["cpu_ms_per_call"]["gateway"] / via[64]["cpu_ms_per_call"]["mcp_server"], 2
        ),
        "note": "load client, gateway and MCP server share the machine's CPUs; cpu_ms_per_call says who spends what",
    }


def _serve(socket_path: str, command: list[str]) -> None:
    """The gateway process: serve until terminated; the task's token goes to stdout once it listens."""
    servers = {"everything": MCPServerSpec(transport="stdio", command=command)}
    gateway = LocalGateway(servers, limits=Limits(requests_per_second=1_000_000))
    with GatewayThread(gateway, Path(socket_path)) as gw:
        print(gw.token(make_task("bench", ["everything"])), flush=True)
        signal.sigwait({signal.SIGTERM})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    _serve(sys.argv[1], json.loads(sys.argv[2]))
