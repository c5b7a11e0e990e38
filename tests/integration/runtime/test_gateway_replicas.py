"""The runtime against gateway processes that die and are replaced, as a cluster's replicas behind a Service: a call
that may have run is never sent again, and a kept-alive connection the gateway closed is never mistaken for one.

Each gateway is a process of its own (gateway_process.py) whose MCP server records every call it receives
(recording_server.py), so the record counts how many times a call reached a tool, whichever gateway sent it.
"""

from __future__ import annotations

import json
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.runtime.conftest import RuntimeProcess, runtime_root, start_runtime
from tests.integration.runtime.gateway_process import gateway_process, recording_task
from tests.integration.runtime.recording_server import records

# The runtime reuses its connection (the wrappers were fetched on it) for a call the first gateway dies during.
CALL_THROUGH_A_CRASH = """
import json
try:
    call_tool("rec/record", {"label": "slow", "seconds": 15})
    outcome = "answered"
except ToolError as exc:
    outcome = {"code": exc.code, "status": exc.status, "message": str(exc)}
print(json.dumps({"outcome": outcome, "after": call_tool("rec/record", {"label": "after"})}))
"""


@pytest.fixture
def root() -> Iterator[Path]:
    # Unix socket paths are limited to ~100 bytes: a short directory, not pytest's deep tmp path.
    with tempfile.TemporaryDirectory(prefix="mcpexec-gw-") as tmp:
        yield runtime_root(Path(tmp))


def _until_recorded(record: Path, expected: list[str], runtime: RuntimeProcess) -> None:
    give_up_at = time.monotonic() + 60
    while records(record) != expected:
        assert runtime.process.poll() is None, runtime.wait()
        assert time.monotonic() < give_up_at, records(record)
        time.sleep(0.05)


def test_a_gateway_killed_during_a_tool_call_is_reported_and_the_call_is_not_sent_again(root: Path) -> None:
    """The first gateway is SIGKILLed once its MCP server has the call; the address then leads to a second gateway
    (already up and admitting the same token, as replicas behind a Service do). The code gets
    `gateway_connection_lost` saying the call may have run; the server ran it once; the next call goes to the
    second gateway."""
    record, token, address = root / "record", secrets.token_urlsafe(), root / "gw.sock"
    task = recording_task("crash", CALL_THROUGH_A_CRASH)
    with (
        gateway_process(root, "first", "crash", record, token, uds=address) as first,
        gateway_process(root, "second", "crash", record, token, uds=root / "second.sock") as second,
    ):
        first.wait_ready()
        second.wait_ready()
        runtime = start_runtime(root, task, f"unix://{address}", token=token)
        _until_recorded(record, ["slow"], runtime)
        (root / "second.sock").replace(address)  # new connections to the address reach the second gateway
        first.kill()
        run = runtime.wait()
    assert run.exit_code == 0, run
    assert records(record) == ["slow", "after"]  # the call reached a tool once, through either gateway
    seen = json.loads(run.result["result"])
    assert seen["outcome"]["code"] == "gateway_connection_lost" and seen["outcome"]["status"] == 502, seen
    assert seen["outcome"]["message"].startswith(
        "gateway_connection_lost (502): connection to the gateway was lost during POST /v1/tools/rec/record/call ("
    )
    assert seen["outcome"]["message"].endswith("; it may have run and was not resent"), seen
    assert seen["after"] == {"result": "after"}


def test_a_connection_the_gateway_closed_while_idle_is_not_used_and_nothing_runs_twice(root: Path) -> None:
    """The gateway closes connections idle for 1 s, sooner than the runtime stops reusing them (4 s): the runtime
    sees the close before it sends, opens a new connection, and each call reaches the tool once."""
    record, token, address = root / "record", secrets.token_urlsafe(), root / "gw.sock"
    code = """
import time
first = call_tool("rec/record", {"label": "one"})
time.sleep(2)
print(first["result"], call_tool("rec/record", {"label": "two"})["result"])
"""
    task = recording_task("idle", code)
    with gateway_process(root, "short", "idle", record, token, uds=address, keep_alive=1) as gateway:
        gateway.wait_ready()
        run = start_runtime(root, task, f"unix://{address}", token=token).wait()
    assert run.exit_code == 0, run
    assert run.result["result"] == "one two\n"
    assert records(record) == ["one", "two"]
