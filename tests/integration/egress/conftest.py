"""Egress test fixtures: a LocalGateway with its egress proxy on loopback TCP, and hosts on this machine.

There is no internet here: the test hosts' names (`*.example.test`) are mapped to their loopback addresses through
the gateway's resolver overrides (MCPEXEC_EGRESS_RESOLVE), and loopback is opened to the proxy only where a test
says so (MCPEXEC_EGRESS_ALLOWED_ADDRESSES, off by default): the private-address refusal is what most tests check.
"""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from gateway.egress.settings import EgressSettings
from gateway.local.in_process import LocalGateway
from gateway.settings import Limits
from mcpexec.api.agenttask import AgentTask
from tests.support.egress_servers import CaFiles, file_server, make_ca
from tests.support.loop_thread import LoopThread

HOSTS = ["pkgs.example.test", "other.example.test"]


class EgressGateway(LoopThread):
    """A LocalGateway in its own event-loop thread: the API and the egress proxy on loopback TCP ports."""

    def __init__(
        self,
        settings: EgressSettings,
        redis_url: str | None = None,
        api_port: int = 0,
        proxy_port: int = 0,
        limits: Limits | None = None,
    ) -> None:
        super().__init__("egress-gateway", timeout=60)
        self.gateway = LocalGateway({}, redis_url=redis_url, limits=limits, egress=settings)
        self.api_port, self.proxy_port = api_port, proxy_port

    def __enter__(self) -> EgressGateway:
        self.start_loop()
        self.api_port = self.run(self.gateway.start_tcp(port=self.api_port))
        self.proxy_port = self.run(self.gateway.serve_egress(port=self.proxy_port)) or 0
        return self

    def __exit__(self, *_exc: object) -> None:
        self.run(self.gateway.stop())
        self.stop_loop()

    def token(self, egress: dict[str, Any], namespace: str = "team") -> str:
        task = AgentTask.model_validate(
            {
                "apiVersion": "mcpexec.dev/v1alpha1",
                "kind": "AgentTask",
                "metadata": {"name": "fetch", "namespace": namespace},
                "spec": {"code": "print(1)", "egress": egress},
            }
        )
        return self.gateway.register_task(task, 600)

    def metrics(self, *expected: str) -> str:
        """The gateway's metrics once they show every `expected` line part (a connection is accounted for just
        after its sandbox had its answer)."""
        for _ in range(200):
            text = generate_latest(self.gateway.core.metrics.registry).decode()
            if all(part in text for part in expected):
                break
            time.sleep(0.05)
        return text


def request(proxy_port: int, head: str, token: str | None, timeout: float = 30) -> tuple[str, socket.socket]:
    """Send a request head (`CONNECT host:port` or `GET http://...`) to the proxy; its status line, and the socket."""
    sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=timeout)
    auth = f"Proxy-Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"{head} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
    return read_status(sock), sock


def read_status(sock: socket.socket) -> str:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode()


def basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"sandbox:{token}".encode()).decode()


@pytest.fixture(scope="module")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> CaFiles:
    return make_ca(tmp_path_factory.mktemp("ca"), HOSTS)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    (root / "hello.txt").write_text("hello through the gateway; write to jane.doe@example.com\n")
    (root / "big.bin").write_bytes(bytes(range(256)) * 4096)  # 1 MiB
    (root / "blob.zip").write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    return root


@pytest.fixture(scope="module")
def https_port(site: Path, test_ca: CaFiles) -> Iterator[int]:
    with file_server(site, test_ca) as port:
        yield port


@pytest.fixture(scope="module")
def http_port(site: Path) -> Iterator[int]:
    with file_server(site) as port:
        yield port


@contextmanager
def egress_gateway(
    redis_url: str | None = None, api_port: int = 0, proxy_port: int = 0, **settings: Any
) -> Iterator[EgressGateway]:
    with EgressGateway(EgressSettings.model_validate(settings), redis_url, api_port, proxy_port) as gateway:
        yield gateway
