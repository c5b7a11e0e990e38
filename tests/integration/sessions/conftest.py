"""Session tier: `mcpexec serve`'s session core for real, without gVisor: the in-process gateway and its session
broker, the runtime in session mode as a real subprocess (the unconfined process sandbox, which runs exactly the
runtime a gVisor sandbox runs), our demo MCP server and the reference server-memory (npm), started by the gateway.
tests/sandbox/local/test_serve.py covers the same under gVisor, driven by MCP clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.sandbox.process import UnsafeProcessSandbox
from mcpexec.local.sessions import LocalSessions
from tests.integration.gateway.conftest import demo_spec
from tests.support.components import reference_server_commands
from tests.support.sessions import SessionsThread


def session_servers(root: Path) -> dict[str, MCPServerSpec]:
    memory = reference_server_commands(root)["memory"]
    return {
        "demo": demo_spec(root / "outbox.jsonl"),
        "memory": MCPServerSpec(
            transport="stdio", command=memory, env={"MEMORY_FILE_PATH": str(root / "memory.jsonl")}
        ),
    }


@pytest.fixture(scope="module")
def sessions_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The servers' files: server-memory's graph is `memory.jsonl` here."""
    return tmp_path_factory.mktemp("sessions")


@pytest.fixture(scope="module")
def sessions(sessions_root: Path) -> Iterator[SessionsThread]:
    root = sessions_root
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCPEXEC_HOME", str(root / "home"))
        with SessionsThread(LocalSessions(session_servers(root), UnsafeProcessSandbox(), warm=1)) as thread:
            yield thread
