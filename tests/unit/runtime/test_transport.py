"""The runtime's connections to the gateway (runtime/transport.py), against real sockets: what a connection that
never opened is reported as, and the keep-alive window the runtime's reuse depends on."""

from __future__ import annotations

import inspect
import socket
from pathlib import Path

import pytest
import uvicorn

import gateway
from runtime.errors import ToolError
from runtime.transport import IDLE_REUSE_SECONDS, Connections


def test_an_idle_connection_is_given_up_before_the_gateway_closes_it() -> None:
    """The gateway's API servers (gateway/web/serving.py, gateway/cluster/serve.py) keep uvicorn's keep-alive
    timeout; a gateway that shortens it must keep it above the runtime's reuse window, or a request may be sent
    into a connection being closed, and reported as possibly run."""
    assert inspect.signature(uvicorn.Config).parameters["timeout_keep_alive"].default > IDLE_REUSE_SECONDS
    sources = Path(gateway.__file__).parent.rglob("*.py")
    assert not [path for path in sources if "timeout_keep_alive" in path.read_text()]


def _refusing_port() -> int:
    with socket.socket() as bound:  # bound, never listening: connections to it are refused
        bound.bind(("127.0.0.1", 0))
        return int(bound.getsockname()[1])


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("unix:///nonexistent/gateway.sock", "FileNotFoundError: "),
        ("http://gateway.invalid:8080", "gaierror: "),
    ],
)
def test_a_connection_that_never_opens_is_reported_as_nothing_sent(url: str, cause: str) -> None:
    with pytest.raises(ToolError) as raised:
        Connections(url).exchange("POST", "/v1/tools/demo/x/call", b"{}", {}, retry_for=0)
    assert (raised.value.status, raised.value.code) == (503, "gateway_unreachable")
    assert str(raised.value).startswith(
        f"gateway_unreachable (503): could not connect to the gateway at {url} ({cause}"
    )
    assert str(raised.value).endswith("; nothing was sent")


def test_a_refused_connection_is_tried_again_until_the_bound() -> None:
    url = f"http://127.0.0.1:{_refusing_port()}"
    with pytest.raises(ToolError) as raised:
        Connections(url).exchange("GET", "/v1/servers", None, {}, retry_for=0.5)
    assert str(raised.value).startswith(
        f"gateway_unreachable (503): could not connect to the gateway at {url} for 0.5 s (ConnectionRefusedError: "
    )
