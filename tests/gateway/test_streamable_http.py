"""Streamable HTTP transport and reconnection: the demo server served over HTTP by its own process; the
gateway keeps working when that server dies and comes back."""

from __future__ import annotations

import time
from pathlib import Path

from mcpexec.agenttask import MCPServerSpec
from tests.gateway.conftest import make_task, serving
from tests.support.components import demo_over_http, free_port

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
