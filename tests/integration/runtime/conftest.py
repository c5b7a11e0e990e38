"""Runtime tier: `python3 -m runtime` as the sandbox runs it, against the real gateway and demo MCP server.

The runtime runs under Debian's /usr/bin/python3 with `-S` (no site-packages) and only the runtime package
on its path, so an import beyond the standard library fails here as it would in the sandbox. No gVisor:
tests/sandbox/local covers the sandbox; these cover what the runtime itself does.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.local.in_process import LocalGateway
from gateway.settings import LLMUpstream
from mcpexec.api.agenttask import AgentTask, parse_agenttask, runtime_task_config
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.sandbox.base import RUNTIME_PACKAGE
from tests.integration.gateway.conftest import GatewayThread, demo_spec
from tests.support.malformed import agenttask

SANDBOX_PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class RuntimeRun:
    exit_code: int
    result: dict[str, Any]
    log: str
    stderr: str


@dataclass(frozen=True)
class RuntimeProcess:
    """A `python3 -S -m runtime` still running, for tests that act on the gateway meanwhile."""

    process: subprocess.Popen[str]
    workspace: Path

    def wait(self, timeout: float = 120) -> RuntimeRun:
        try:
            _stdout, stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise
        result = json.loads((self.workspace / ".mcpexec" / "result.json").read_text())
        log = (self.workspace / "output.log").read_text() if (self.workspace / "output.log").exists() else ""
        return RuntimeRun(self.process.returncode, result, log, stderr)


def runtime_root(root: Path) -> Path:
    """Lay out `root` for runtimes: the runtime package and nothing else on their path, a skills dir, run dirs."""
    (root / "path").mkdir()
    (root / "path" / "runtime").symlink_to(RUNTIME_PACKAGE)
    (root / "skills").mkdir()
    (root / "runs").mkdir()
    return root


def start_runtime(
    root: Path,
    task: AgentTask,
    gateway_url: str,
    *,
    token: str | None = None,
    token_file: Path | None = None,
    task_json: str | None = None,
    await_assignment: bool = False,
    report: bool = False,
    command_prefix: tuple[str, ...] = (),
) -> RuntimeProcess:
    """Start `python3 -S -m runtime` on `task` (laid out by runtime_root) against the gateway at `gateway_url`,
    with its `token` in the environment or its `token_file` (read on every request); `task_json` replaces the real
    task file, `report` has it report its result to the gateway (as in a cluster), `command_prefix` runs it under
    another program (unshare)."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{task.metadata.name}-", dir=root / "runs"))
    workspace, etc = run_dir / "workspace", run_dir / "etc"
    workspace.mkdir(parents=True)
    etc.mkdir()
    config = runtime_task_config(task.metadata.namespace, task.metadata.name, "uid-1", task.spec)
    (etc / "task.json").write_text(task_json if task_json is not None else json.dumps(config))
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(root / "path"),
        "MCPEXEC_GATEWAY_URL": gateway_url,
        "MCPEXEC_TASK_FILE": str(etc / "task.json"),
        "MCPEXEC_RESULT_FILE": str(workspace / ".mcpexec" / "result.json"),
        "MCPEXEC_WORKSPACE": str(workspace),
        "MCPEXEC_SKILLS": str(root / "skills"),
    }
    if await_assignment:
        env["MCPEXEC_AWAIT_ASSIGNMENT"] = "1"
    if report:
        env["MCPEXEC_REPORT_RESULT"] = "1"
    if token_file is not None:  # the cluster's way: a token file (projected SA token)
        env["MCPEXEC_TOKEN_FILE"] = str(token_file)
    elif token is not None:
        env["MCPEXEC_TOKEN"] = token
    process = subprocess.Popen(
        [*command_prefix, SANDBOX_PYTHON, "-S", "-m", "runtime"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return RuntimeProcess(process, workspace)


@dataclass
class RuntimeHarness:
    """Runs tasks through the runtime against one gateway; workspace and skills dirs are per harness."""

    gateway: GatewayThread
    root: Path

    def task(self, name: str, **spec: Any) -> AgentTask:
        spec.setdefault("mcpServers", ["demo"])
        spec.setdefault("timeoutSeconds", 30)
        return parse_agenttask(agenttask(name, **spec))

    def run(
        self, task: AgentTask, *, task_json: str | None = None, token: str | None = None, await_assignment: bool = False
    ) -> RuntimeRun:
        """One `python3 -S -m runtime`; `task_json` and `token` replace the real ones (broken-input tests);
        `await_assignment` runs it as a SandboxPool's sandbox (it asks the gateway for its task)."""
        token = token or self.gateway.token(task)
        if self.gateway.socket_path is None:  # the cluster's way: a URL and a token file (projected SA token)
            handle, name = tempfile.mkstemp(suffix=".token", dir=self.root / "runs")
            os.write(handle, (token + "\n").encode())
            os.close(handle)
            started = start_runtime(
                self.root,
                task,
                self.gateway.base_url,
                token_file=Path(name),
                task_json=task_json,
                await_assignment=await_assignment,
            )
        else:
            url = f"unix://{self.gateway.socket_path}"
            started = start_runtime(
                self.root, task, url, token=token, task_json=task_json, await_assignment=await_assignment
            )
        return started.wait()


@contextmanager
def runtime_harness(
    over_socket: bool = True,
    llm: LLMUpstream | None = None,
    extra_servers: dict[str, MCPServerSpec] | None = None,
    redis_url: str | None = None,
) -> Iterator[RuntimeHarness]:
    """A fresh gateway (demo server and `extra_servers`, in-memory vault unless `redis_url`, optional LLM upstream)
    and the runtime on its own path."""
    # Unix socket paths are limited to ~100 bytes: a short directory, not pytest's deep tmp path.
    with tempfile.TemporaryDirectory(prefix="mcpexec-rt-") as tmp:
        root = runtime_root(Path(tmp))
        servers = {"demo": demo_spec(root / "outbox.jsonl"), **(extra_servers or {})}
        gateway = LocalGateway(servers, redis_url=redis_url, llm=llm)
        with GatewayThread(gateway, root / "gw.sock" if over_socket else None) as gw:
            yield RuntimeHarness(gw, root)


@pytest.fixture(scope="module")
def harness() -> Iterator[RuntimeHarness]:
    """The runtime against a gateway on a Unix socket (local mode's transport), shared by a module's tests."""
    with runtime_harness() as shared:
        yield shared
