"""The floor under the gateway: the thinnest HTTP-to-MCP proxy on the gateway's own stack, for gateway_overhead.

Same HTTP server (uvicorn, httptools, loopback TCP), same MCP client (the gateway's own `mcp_client`: `mcp.Client`
over `bounded_stdio`), same route, and nothing else: no token, rate limit, policy, schema check,
PII scan, audit, metrics or FastAPI. What a call costs here is what any Python gateway on these packages pays
for the hop; what the gateway costs beyond it is its own work.

Run as `python -m tests.bench._bare_proxy <workdir>`: prints its base URL, serves until SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.settings import Limits
from gateway.upstreams.pool import mcp_client
from gateway.web.serving import BackgroundServer
from tests.bench.gateway_overhead import bench_specs


def bare_app(clients: dict[str, Client]) -> Starlette:
    async def call(request: Request) -> Response:
        body = await request.json()
        result = await clients[request.path_params["server"]].call_tool(request.path_params["tool"], body["arguments"])
        return Response(result.model_dump_json(by_alias=True, exclude_none=True), media_type="application/json")

    return Starlette(routes=[Route("/v1/tools/{server}/{tool}/call", call, methods=["POST"])])


async def _serve(workdir: Path) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for server, spec in bench_specs(workdir).items():
            client = mcp_client(spec, Limits().max_result_bytes, spec.headers)
            clients[server] = await stack.enter_async_context(client)
        http = BackgroundServer(bare_app(clients))
        await http.start()
        print(f"http://127.0.0.1:{http.port}", flush=True)
        await stop.wait()
        await http.stop()


if __name__ == "__main__":
    asyncio.run(_serve(Path(sys.argv[1])))
