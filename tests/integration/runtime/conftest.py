"""Runtime tier: `python3 -m runtime` as the sandbox runs it, against the real gateway and demo MCP server.

The runtime runs under Debian's /usr/bin/python3 with `-S` (no site-packages) and only the runtime package
on its path, so an import beyond the standard library fails here as it would in the sandbox. No gVisor:
tests/sandbox/local covers the sandbox; these cover what the runtime itself does.
"""

from __future__ import annotations

import json
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
        run_dir = Path(tempfile.mkdtemp(prefix=f"{task.metadata.name}-", dir=self.root / "runs"))
        workspace, etc = run_dir / "workspace", run_dir / "etc"
        workspace.mkdir(parents=True)
        etc.mkdir()
        config = runtime_task_config(task.metadata.namespace, task.metadata.name, "uid-1", task.spec)
        (etc / "task.json").write_text(task_json if task_json is not None else json.dumps(config))
        token = token or self.gateway.token(task)
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(self.root / "path"),
            "MCPEXEC_TASK_FILE": str(etc / "task.json"),
            "MCPEXEC_RESULT_FILE": str(workspace / ".mcpexec" / "result.json"),
            "MCPEXEC_WORKSPACE": str(workspace),
            "MCPEXEC_SKILLS": str(self.root / "skills"),
        }
        if await_assignment:
            env["MCPEXEC_AWAIT_ASSIGNMENT"] = "1"
        if self.gateway.socket_path is None:  # the cluster's way: a URL and a token file (projected SA token)
            (etc / "token").write_text(token + "\n")
            env |= {"MCPEXEC_GATEWAY_URL": self.gateway.base_url, "MCPEXEC_TOKEN_FILE": str(etc / "token")}
        else:
            env |= {"MCPEXEC_GATEWAY_URL": f"unix://{self.gateway.socket_path}", "MCPEXEC_TOKEN": token}
        done = subprocess.run(
            [SANDBOX_PYTHON, "-S", "-m", "runtime"],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        result = json.loads((workspace / ".mcpexec" / "result.json").read_text())
        log = (workspace / "output.log").read_text() if (workspace / "output.log").exists() else ""
        return RuntimeRun(done.returncode, result, log, done.stderr)


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
        root = Path(tmp)
        (root / "path").mkdir()
        (root / "path" / "runtime").symlink_to(RUNTIME_PACKAGE)  # the runtime package and nothing else
        (root / "skills").mkdir()
        (root / "runs").mkdir()
        servers = {"demo": demo_spec(root / "outbox.jsonl"), **(extra_servers or {})}
        gateway = LocalGateway(servers, redis_url=redis_url, llm=llm)
        with GatewayThread(gateway, root / "gw.sock" if over_socket else None) as gw:
            yield RuntimeHarness(gw, root)


@pytest.fixture(scope="module")
def harness() -> Iterator[RuntimeHarness]:
    """The runtime against a gateway on a Unix socket (local mode's transport), shared by a module's tests."""
    with runtime_harness() as shared:
        yield shared
