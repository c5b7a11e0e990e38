"""A request that never left (no connection opened: the name does not resolve, the port refuses, the Unix socket
is not there yet) is tried again with backoff for a bounded time, for every kind of request: a gateway that
comes a little late costs the task a wait, not its life; one that never comes ends it with a clear error."""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.runtime.conftest import runtime_root, start_runtime
from tests.integration.runtime.gateway_process import gateway_process, recording_task
from tests.integration.runtime.recording_server import records
from tests.support.components import free_port

CALL = "print(call_tool('rec/record', {'label': 'late'})['result'])"
LATE_SECONDS = 2


@pytest.fixture
def root() -> Iterator[Path]:
    # Unix socket paths are limited to ~100 bytes: a short directory, not pytest's deep tmp path.
    with tempfile.TemporaryDirectory(prefix="mcpexec-reach-") as tmp:
        yield runtime_root(Path(tmp))


@pytest.mark.parametrize("transport", ["unix socket not there yet", "port refusing connections"])
def test_a_gateway_that_listens_late_is_waited_for(root: Path, transport: str) -> None:
    record, token, go = root / "record", secrets.token_urlsafe(), root / "go"
    over_socket = transport == "unix socket not there yet"
    uds, port = (root / "gw.sock", None) if over_socket else (None, free_port())
    url = f"unix://{uds}" if over_socket else f"http://127.0.0.1:{port}"
    with gateway_process(root, "late", "late", record, token, uds=uds, port=port, listen_when=go) as gateway:
        gateway.wait_waiting()
        runtime = start_runtime(root, recording_task("late", CALL), url, token=token)
        time.sleep(LATE_SECONDS)
        go.touch()
        run = runtime.wait()
    assert run.exit_code == 0, run
    assert run.result["result"] == "late\n"
    assert records(record) == ["late"]


def test_a_gateway_name_that_resolves_late_is_waited_for(root: Path) -> None:
    """The runtime runs in a mount namespace of its own whose /etc/hosts is a file of the test's: the gateway's name
    resolves nowhere (a real getaddrinfo failure, gaierror) until the test adds it there."""
    record, token, hosts = root / "record", secrets.token_urlsafe(), root / "hosts"
    shutil.copyfile("/etc/hosts", hosts)
    port = free_port()
    bind_hosts = ("sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts))
    with gateway_process(root, "named", "named", record, token, port=port) as gateway:
        gateway.wait_ready()
        runtime = start_runtime(
            root,
            recording_task("named", CALL),
            f"http://mcpexec-gateway.test:{port}",
            token=token,
            command_prefix=("unshare", "--mount", "--propagation", "private", "--", *bind_hosts),
        )
        time.sleep(LATE_SECONDS)
        with hosts.open("a") as appended:  # in place: the bind mount shows this very file
            appended.write("127.0.0.1 mcpexec-gateway.test\n")
        run = runtime.wait()
    assert run.exit_code == 0, run
    assert run.result["result"] == "late\n"
    assert records(record) == ["late"]


def test_a_gateway_that_never_comes_ends_the_task_with_a_clear_error(root: Path) -> None:
    """`.invalid` never resolves (RFC 6761): the runtime tries for its 30 s, then fails the task saying so."""
    task = recording_task("never", CALL)
    run = start_runtime(root, task, "http://gateway.invalid:8080", token="unused").wait()
    assert run.exit_code == 1
    assert run.result["error"].startswith(
        "gateway: gateway_unreachable (503): could not connect to the gateway at http://gateway.invalid:8080 for "
        "30 s (gaierror: "
    ), run.result
    assert run.result["error"].endswith("; nothing was sent")
