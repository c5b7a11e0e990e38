"""Gateway test fixtures: a LocalGateway on a Unix socket in its own event-loop thread, in front of real servers.

Servers: the five reference MCP servers (npm and PyPI) and our demo customer server, all started for real by
the gateway over stdio; Redis is a real redis-server. Tests talk plain HTTP to the socket, like the sandbox.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.local.in_process import LocalGateway
from gateway.settings import Limits, LLMUpstream
from mcpexec.api.agenttask import AgentTask
from mcpexec.api.mcpserver import MCPServerSpec
from tests.support.components import redis_server, reference_server_commands
from tests.support.loop_thread import LoopThread

ALL_SERVERS = ["demo", "everything", "memory", "filesystem", "time", "git"]
# In the environment of the `fragile` server's processes only, so a test can find and kill them.
FRAGILE_MARKER = "MCPEXEC_TEST_FRAGILE=1"


class GatewayThread(LoopThread):
    """Runs a LocalGateway in a private event loop so tests can use a plain synchronous HTTP client."""

    def __init__(self, gateway: LocalGateway, socket_path: Path | None) -> None:
        """`socket_path=None` serves on a free loopback TCP port instead (see `base_url`)."""
        super().__init__("gateway-loop")
        self.gateway = gateway
        self.socket_path = socket_path
        self.base_url = "http://gateway"
        self.ops_socket = None if socket_path is None else socket_path.with_name(socket_path.name + ".ops")
        self.ops_url = "http://gateway-ops"

    def __enter__(self) -> GatewayThread:
        self.start_loop()
        if self.socket_path is None:
            self.base_url = f"http://127.0.0.1:{self.run(self.gateway.start_tcp())}"
        else:
            self.run(self.gateway.start(str(self.socket_path)))
        ops_port = self.run(self.gateway.serve_ops(None if self.ops_socket is None else str(self.ops_socket)))
        if ops_port is not None:
            self.ops_url = f"http://127.0.0.1:{ops_port}"
        return self

    def __exit__(self, *_exc: object) -> None:
        self.run(self.gateway.stop())
        self.stop_loop()

    def token(self, task: AgentTask, ttl_seconds: int = 600) -> str:
        return self.gateway.register_task(task, ttl_seconds)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=str(self.socket_path) if self.socket_path else None)
        return httpx.Client(transport=transport, base_url=self.base_url, headers=headers, timeout=120)

    def ops_client(self) -> httpx.Client:
        """The ops port (health, metrics, API docs): the probes' and scrapers', never a sandbox's."""
        transport = httpx.HTTPTransport(uds=str(self.ops_socket) if self.ops_socket else None)
        return httpx.Client(transport=transport, base_url=self.ops_url, timeout=120)

    def metrics(self) -> str:
        with self.ops_client() as ops:
            return ops.get("/metrics").text

    def client_for(self, task: AgentTask, ttl_seconds: int = 600) -> httpx.Client:
        return self.client(self.token(task, ttl_seconds))


def demo_spec(outbox: Path) -> MCPServerSpec:
    return MCPServerSpec(
        transport="stdio",
        description="Fake customer records and an outbox",
        command=[sys.executable, "-m", "mcpexec.demo_server"],
        env={"DEMO_OUTBOX": str(outbox)},
    )


def all_server_specs(root: Path) -> dict[str, MCPServerSpec]:
    """The five reference servers plus the demo; `root` holds the filesystem root, a git repo and the outbox."""
    files = root / "files"
    files.mkdir(exist_ok=True)
    (files / "hello.txt").write_text("Hello from the filesystem server. Contact: ops@example.com\n")
    repo = root / "repo"
    repo.mkdir(exist_ok=True)
    git = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "README.md").write_text("test repo\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], check=True)
    commands = reference_server_commands(files)
    commands["git"] = [*commands["git"], "--repository", str(repo)]
    specs = {name: MCPServerSpec(transport="stdio", command=command) for name, command in commands.items()}
    specs["memory"] = MCPServerSpec(
        transport="stdio", command=commands["memory"], env={"MEMORY_FILE_PATH": str(root / "memory.jsonl")}
    )
    specs["demo"] = demo_spec(root / "outbox.jsonl")
    return specs


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway")


@pytest.fixture(scope="session")
def gateway(workdir: Path, redis_url: str) -> Iterator[GatewayThread]:
    """One gateway for the session, Redis-backed vault, all six servers plus one that cannot start."""
    servers = all_server_specs(workdir)
    servers["broken"] = MCPServerSpec(transport="stdio", command=[str(workdir / "no-such-server")])
    servers["slow"] = servers["everything"].model_copy(update={"call_timeout_seconds": 1})
    servers["fragile"] = servers["everything"].model_copy(update={"env": dict([FRAGILE_MARKER.split("=")])})
    with GatewayThread(LocalGateway(servers, redis_url=redis_url), workdir / "gw.sock") as gw:
        yield gw


@contextmanager
def serving(
    servers: dict[str, MCPServerSpec], socket_path: Path | None, task: AgentTask, **options: Any
) -> Iterator[tuple[GatewayThread, httpx.Client]]:
    """A fresh gateway and a client holding `task`'s token."""
    with start_gateway(servers, socket_path, **options) as gw, gw.client_for(task) as client:
        yield gw, client


def start_gateway(
    servers: dict[str, MCPServerSpec],
    socket_path: Path | None,
    redis_url: str | None = None,
    llm: LLMUpstream | None = None,
    limits: Limits | None = None,
    pii_ner: bool = False,
) -> GatewayThread:
    return GatewayThread(
        LocalGateway(servers, redis_url=redis_url, llm=llm, limits=limits, pii_ner=pii_ner), socket_path
    )
