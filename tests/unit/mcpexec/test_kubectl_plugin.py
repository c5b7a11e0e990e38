"""`kubectl mcpexec` when the gateway cannot be reached: a plain message saying how to point it at the gateway, not
a traceback (the approval flows themselves: tests/cluster/test_approval_ways.py, tests/e2e/test_approvals_node.py)."""

from __future__ import annotations

import socket

import pytest

from mcpexec.kubectl_plugin import main


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("verb", [["pending", "export"], ["approve", "export", "0" * 64]])
def test_an_unreachable_gateway_is_said_plainly(verb: list[str]) -> None:
    gateway = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(SystemExit) as exited:
        main(["--gateway", gateway, "--token", "a-token", "-n", "team-a", *verb])
    said = str(exited.value.code)
    assert said.startswith(f"cannot reach the gateway at {gateway}") and "ConnectError" in said
    assert "--gateway or MCPEXEC_GATEWAY_URL" in said
