"""Streamable HTTP transport and reconnection: the demo server served over HTTP by its own process; the
gateway keeps working when that server dies and comes back."""

from __future__ import annotations

import time
from pathlib import Path

from mcpexec.api.mcpserver import MCPServerSpec
from tests.integration.gateway.conftest import serving
from tests.support.components import demo_over_http, everything_over_http, free_port, time_wait_sockets
from tests.support.tasks import make_task

GET = {"arguments": {"customer_id": "C002"}}


def test_streamable_http_server_with_reconnect(workdir: Path) -> None:
    port = free_port()
    spec = MCPServerSpec(transport="streamableHttp", url=f"http://127.0.0.1:{port}/mcp", headers={"X-Demo": "1"})
    with demo_over_http(port), serving({"crm": spec}, workdir / "gw-http.sock", make_task("http", ["crm"])) as (_gw, c):
        assert c.get("/v1/servers").json()["servers"][0]["connected"] is True
        first = c.post("/v1/tools/crm/get_customer/call", json=GET)
        assert first.status_code == 200 and first.json()["structuredContent"]["email"] == "[EMAIL_1]"
        assert "crm/get_customer" in c.get("/v1/tools").json()["tools"]
    late = make_task("http-late", ["crm"])
    with serving({"crm": spec}, workdir / "gw-http2.sock", late) as (_gw, c):
        # Down at start-up: reported, refused with 503, retried in the background.
        assert c.get("/v1/servers").json()["servers"][0]["connected"] is False
        assert c.post("/v1/tools/crm/get_customer/call", json=GET).status_code == 503
        with demo_over_http(port):
            deadline = time.monotonic() + 60
            while c.get("/v1/servers").json()["servers"][0]["connected"] is False:
                assert time.monotonic() < deadline, "gateway never reconnected"
                time.sleep(0.2)
            again = c.post("/v1/tools/crm/get_customer/call", json=GET)
            assert again.status_code == 200 and again.json()["structuredContent"]["email"] == "[EMAIL_1]"


def test_calls_to_an_http_server_share_one_connection(workdir: Path) -> None:
    """server-everything (the TypeScript SDK's transport) sends each answer as a sized event stream, which the SDK
    closes before its end: without the gateway's drain, every call opened a connection and left one in TIME_WAIT."""
    port = free_port()
    spec = MCPServerSpec(transport="streamableHttp", url=f"http://127.0.0.1:{port}/mcp")
    task = make_task("keepalive", ["everything"])
    with everything_over_http(port), serving({"everything": spec}, workdir / "gw-keep.sock", task) as (_gw, c):

        def echo(message: str) -> str:
            answer = c.post("/v1/tools/everything/echo/call", json={"arguments": {"message": message}})
            assert answer.status_code == 200, answer.text
            return str(answer.json()["content"][0]["text"])

        assert echo("open the session") == "Echo: open the session"
        closed_before = time_wait_sockets(port)
        assert [echo(f"call {i}") for i in range(30)] == [f"Echo: call {i}" for i in range(30)]
        assert time_wait_sockets(port) - closed_before <= 1
