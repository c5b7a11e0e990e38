"""Local tier: `mcpexec run` for real: the in-process gateway, the demo MCP server, and gVisor (runsc)."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpexec.api.agenttask import parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.cli import load_servers
from mcpexec.local.mounts import mounted_under
from mcpexec.local.run import DEFAULT_WORKSPACE_BYTES, LocalOutcome, run_task
from mcpexec.local.sandbox.runsc import RunscSandbox
from tests.support.malformed import agenttask


def loop_devices_of(home: Path) -> list[str]:
    """`losetup -a` lines naming a file under `home` (a workspace image still attached to a loop device)."""
    listed = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    return [line for line in listed.splitlines() if str(home) in line]


def until(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The state root of one test; after it, nothing may stay mounted or attached there, whatever the run did
    (a loop device goes a moment after the last sandbox process holding its filesystem)."""
    home = tmp_path / "mcpexec-home"
    monkeypatch.setenv("MCPEXEC_HOME", str(home))
    yield home
    until(lambda: not mounted_under(home) and not loop_devices_of(home), 30)
    left = mounted_under(home)
    for point in left:  # not to leave them to the next tests
        subprocess.run(["umount", "--lazy", str(point)], check=False)
    assert not left, f"still mounted after the test: {left}"
    assert not loop_devices_of(home), "a workspace image is still attached to a loop device"


@pytest.fixture(scope="session")
def demo_servers() -> dict[str, MCPServerSpec]:
    return load_servers(None)


def run_code(
    code: str, servers: dict[str, MCPServerSpec], workspace_bytes: int = DEFAULT_WORKSPACE_BYTES, **spec: Any
) -> LocalOutcome:
    """Run `code` as a direct-mode task under gVisor, against the demo server."""
    spec.setdefault("mcpServers", ["demo"])
    spec.setdefault("timeoutSeconds", 30)
    task = parse_agenttask(agenttask(spec.pop("name", "t"), code=code, **spec))
    return asyncio.run(run_task(task, servers, RunscSandbox(), workspace_bytes=workspace_bytes))


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


@contextmanager
def owner_image(state_home: Path, owner: str) -> Iterator[Path]:
    """The owner's skills image, mounted read-only somewhere else for the test to look into."""
    with tempfile.TemporaryDirectory() as point:
        image = state_home / "skills" / f"{owner}.img"
        subprocess.run(["mount", "-o", "loop,ro,nosuid,nodev", str(image), point], check=True)
        try:
            yield Path(point)
        finally:
            subprocess.run(["umount", point], check=True)
