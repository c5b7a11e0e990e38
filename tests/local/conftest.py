"""Local tier: `mcpexec run` for real: the in-process gateway, the demo MCP server, and gVisor (runsc)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpexec.agenttask import MCPServerSpec, parse_agenttask
from mcpexec.cli import load_servers
from mcpexec.local_run import LocalOutcome, run_task
from mcpexec.sandbox.runsc import RunscSandbox
from tests.support.malformed import agenttask


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "mcpexec-home"
    monkeypatch.setenv("MCPEXEC_HOME", str(home))
    yield home


@pytest.fixture(scope="session")
def demo_servers() -> dict[str, MCPServerSpec]:
    return load_servers(None)


def run_code(code: str, servers: dict[str, MCPServerSpec], **spec: Any) -> LocalOutcome:
    """Run `code` as a direct-mode task under gVisor, against the demo server."""
    spec.setdefault("mcpServers", ["demo"])
    spec.setdefault("timeoutSeconds", 30)
    task = parse_agenttask(agenttask(spec.pop("name", "t"), code=code, **spec))
    return asyncio.run(run_task(task, servers, RunscSandbox()))


def live_sandboxes() -> list[str]:
    """Pids of gVisor sandboxes started by RunscSandbox (its private --root), not other users' pods."""
    found = subprocess.run(["pgrep", "-f", "runsc-sandbox --root=\\S*/mcpexec-runsc-"], capture_output=True, text=True)
    return found.stdout.split()
