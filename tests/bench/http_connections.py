"""Calls to a streamable-HTTP server: the MCP SDK's client as it comes (baseline) vs the gateway's client for the
same server (`gateway.upstreams.pool.mcp_client`, which keeps its connection: gateway/upstreams/keepalive.py).

One real server-everything process (Node: the TypeScript SDK's transport, which sends each answer as a sized
event stream) answers `echo`; each client holds one session to it and calls from N concurrent callers, at
concurrency 1, 16 and 64, the clients alternating for three rounds (figures are medians). Per client: calls/s,
p50, the CPU milliseconds per call of this process (the client) and of the server, and the TCP connections opened
per call (the kernel's count of connections this machine opened, /proc/net/snmp ActiveOpens: the bench is all
that runs). `speedup` is gateway client / SDK client calls/s.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.upstreams.pool import mcp_client
from mcpexec.api.mcpserver import MCPServerSpec
from tests.bench._process_cpu import cpu_seconds
from tests.support.components import everything_over_http, free_port

LEVELS = (1, 16, 64)
SECONDS = 4
ROUNDS = 3
ARGUMENTS = {"message": "benchmark payload: order 1234 shipped to the warehouse"}


def _tcp_connections_opened() -> int:
    header, values = (
        line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Tcp:")
    )
    return int(values[header.index("ActiveOpens")])


async def _level(client: Client, concurrency: int, server_pid: int) -> dict[str, Any]:
    latencies: list[float] = []
    deadline = time.perf_counter() + SECONDS

    async def caller() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            result = await client.call_tool("echo", ARGUMENTS)
            latencies.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"echo failed: {result.content}")

    opened, own, server, started = (
        _tcp_connections_opened(),
        time.process_time(),
        cpu_seconds(server_pid),
        time.perf_counter(),
    )
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    calls = len(latencies)
    return {
        "calls_per_s": round(calls / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "client_cpu_ms_per_call": round((time.process_time() - own) * 1000 / calls, 3),
        "server_cpu_ms_per_call": round((cpu_seconds(server_pid) - server) * 1000 / calls, 3),
        "tcp_connections_opened_per_call": round((_tcp_connections_opened() - opened) / calls, 3),
    }


async def _measure(port: int, server_pid: int) -> dict[str, dict[int, list[dict[str, Any]]]]:
    url = f"http://127.0.0.1:{port}/mcp"
    clients: dict[str, Callable[[], Client]] = {
        "sdk_client": lambda: Client(streamable_http_client(url), mode="legacy", cache=None),
        "gateway_client": lambda: mcp_client(MCPServerSpec(transport="streamableHttp", url=url), 10 << 20, {}),
    }
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {name: {c: [] for c in LEVELS} for name in clients}
    for concurrency in LEVELS:
        for _ in range(ROUNDS):
            for name, make in clients.items():
                async with make() as client:
                    await client.call_tool("echo", ARGUMENTS)  # the session is open, the server warm
                    runs[name][concurrency].append(await _level(client, concurrency, server_pid))
    return runs


def run() -> dict[str, Any]:
    port = free_port()
    with everything_over_http(port) as server:
        runs = asyncio.run(_measure(port, server.pid))
    figures = {
        name: {
            str(c): {key: statistics.median(run[key] for run in rounds) for key in rounds[0]}
            for c, rounds in levels.items()
        }
        for name, levels in runs.items()
    }
    return figures | {
        "speedup": {
            str(c): round(
                figures["gateway_client"][str(c)]["calls_per_s"] / figures["sdk_client"][str(c)]["calls_per_s"], 3
            )
            for c in LEVELS
        },
        "note": f"median of {ROUNDS} rounds of {SECONDS} s, the clients alternating, each with its own session to the "
        "same server process; client and server share the machine's CPUs",
    }
