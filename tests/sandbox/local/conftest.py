"""Local tier: `mcpexec run` for real: the in-process gateway, the demo MCP server, and gVisor (runsc)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpexec.api.agenttask import parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.cli import load_servers
from mcpexec.local.run import LocalOutcome, run_task
from mcpexec.local.sandbox.runsc import RunscSandbox
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


def orphaned_sandboxes(grace_seconds: float = 10) -> list[int]:
    """gVisor sandboxes of RunscSandbox still alive after their run ended (their private --root is gone).

    Sandboxes of runs still going on (another test session on this machine) keep their --root and are not
    counted. A sandbox gets `grace_seconds` to finish exiting after `runsc delete`.
    """
    deadline = time.monotonic() + grace_seconds
    while True:
        orphans = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            roots = [a.removeprefix("--root=") for a in args if a.startswith("--root=") and "/mcpexec-runsc-" in a]
            if args[0] == "runsc-sandbox" and roots and not Path(roots[0]).exists():
                orphans.append(int(cmdline.parent.name))
        if not orphans or time.monotonic() > deadline:
            return orphans
        time.sleep(0.1)
