"""Egress from the network-less gVisor sandbox (docs/egress.md): `mcpexec run` of a task granted one host fetches a
page and `pip install`s a package from a PyPI-style index on this machine, through the runtime's loopback forwarder
inside the sandbox, the gateway's egress socket and its proxy; a host outside the grant is refused, and the host's
own loopback stays out of reach of the sandbox's.

The test hosts' names reach their loopback servers through the gateway's resolver overrides, as in the integration
tests (tests/integration/egress/): MCPEXEC_EGRESS_RESOLVE, and MCPEXEC_EGRESS_ALLOWED_ADDRESSES for loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.run import TaskError
from tests.sandbox.local.conftest import run_code
from tests.sandbox.local.test_serve import execute, serve_command
from tests.support.components import REPO
from tests.support.egress_servers import CaFiles, file_server, make_ca, simple_index

HOSTS = ["pkgs.example.test", "other.example.test"]


@pytest.fixture(scope="module")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> CaFiles:
    return make_ca(tmp_path_factory.mktemp("ca"), HOSTS)


@pytest.fixture(scope="module")
def index_port(tmp_path_factory: pytest.TempPathFactory, test_ca: CaFiles) -> Iterator[int]:
    """A PyPI-style index (and a page) over HTTPS on this machine's loopback."""
    root = tmp_path_factory.mktemp("index")
    simple_index(root, "egresspkg", "1.0.0", "ANSWER = 42\n")
    (root / "hello.txt").write_text("hello from outside the sandbox\n")
    with file_server(root, test_ca) as port:
        yield port


@pytest.fixture
def egress_admin(monkeypatch: pytest.MonkeyPatch, index_port: int) -> None:
    """This machine's user as the admin: both test hosts in the ceiling and in the grants of `mcpexec run`'s tasks
    (namespace default) and `mcpexec serve`'s sessions (namespace local)."""
    grant = {"hosts": HOSTS, "ports": [index_port]}
    monkeypatch.setenv("MCPEXEC_EGRESS", json.dumps({**grant, "namespaces": {"default": grant, "local": grant}}))
    monkeypatch.setenv("MCPEXEC_EGRESS_RESOLVE", json.dumps({name: ["127.0.0.1"] for name in HOSTS}))
    monkeypatch.setenv("MCPEXEC_EGRESS_ALLOWED_ADDRESSES", json.dumps(["127.0.0.1/32"]))


def _code(ca: str, port: int) -> str:
    return f"""
import os, socket, ssl, subprocess, sys, urllib.request
open("/workspace/ca.pem", "w").write({ca!r})
context = ssl.create_default_context(cafile="/workspace/ca.pem")
print("proxy", os.environ["HTTPS_PROXY"].startswith("http://127.0.0.1:"))
print("page", urllib.request.urlopen("https://pkgs.example.test:{port}/hello.txt", context=context).read().decode())
try:
    urllib.request.urlopen("https://other.example.test:{port}/hello.txt", context=context)
    print("OTHER REACHED")
except OSError as exc:
    print("other refused:", exc)
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("HOST LOOPBACK REACHED")
except OSError as exc:
    print("direct refused:", type(exc).__name__)
pip = [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--retries", "0",
       "--target", "/workspace/lib", "--cert", "/workspace/ca.pem"]
done = subprocess.run(pip + ["--index-url", "https://pkgs.example.test:{port}/simple", "egresspkg"],
                      capture_output=True, text=True)
print("pip", done.returncode, done.stderr[-1500:])
sys.path.insert(0, "/workspace/lib")
import egresspkg
print("answer", egresspkg.ANSWER)
refused = subprocess.run(pip + ["-vv", "--index-url", "https://other.example.test:{port}/simple", "egresspkg"],
                         capture_output=True, text=True)
print("pip other", refused.returncode, "403 other.example.test" in refused.stdout + refused.stderr)
"""


def test_a_granted_task_fetches_and_pip_installs_through_the_gateway_from_the_network_less_sandbox(
    demo_servers: dict[str, MCPServerSpec], egress_admin: None, test_ca: CaFiles, index_port: int
) -> None:
    code = _code(test_ca.ca_file.read_text(), index_port)
    egress = {"hosts": ["pkgs.example.test"], "ports": [index_port]}
    outcome = run_code(code, demo_servers, egress=egress, timeoutSeconds=240)
    assert outcome.phase == "Succeeded", f"{outcome.error}\n{outcome.result}"
    lines = outcome.result.splitlines()
    assert "proxy True" in lines
    assert "page hello from outside the sandbox" in lines
    assert any(
        line.startswith("other refused:") and "403" in line and "not in the task's egress grant" in line
        for line in lines
    ), outcome.result
    assert "direct refused: ConnectionRefusedError" in lines, "the host's loopback is not the sandbox's"
    assert "pip 0" in outcome.result and "answer 42" in lines, outcome.result
    assert "pip other 1 True" in lines, outcome.result
    assert (outcome.workspace / "lib" / "egresspkg.py").read_text() == "ANSWER = 42\n"


def test_a_task_asking_beyond_the_grant_does_not_start(
    demo_servers: dict[str, MCPServerSpec], egress_admin: None, index_port: int, state_home: Path
) -> None:
    with pytest.raises(TaskError, match=r"PolicyWidened: spec\.egress: 'api\.example\.test' not allowed by"):
        run_code("print(1)", demo_servers, egress={"hosts": ["api.example.test"], "ports": [index_port]})
    assert not (state_home / "runs").exists() or not any((state_home / "runs").iterdir())


def test_a_serve_session_granted_a_host_fetches_through_the_gateway_and_is_refused_another(
    egress_admin: None, test_ca: CaFiles, index_port: int, state_home: Path
) -> None:
    options = ["--egress-host", "pkgs.example.test", "--egress-port", str(index_port)]
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_command(*options)[1:],
        env={key: os.environ[key] for key in os.environ if key == "PATH" or key.startswith("MCPEXEC_")},
        cwd=str(REPO),
    )
    fetch = (
        "import ssl, urllib.request\n"
        f"open('/workspace/ca.pem', 'w').write({test_ca.ca_file.read_text()!r})\n"
        "context = ssl.create_default_context(cafile='/workspace/ca.pem')\n"
        "def fetch(host):\n"
        f"    url = f'https://{{host}}:{index_port}/hello.txt'\n"
        "    try:\n"
        "        return urllib.request.urlopen(url, context=context).read().decode()\n"
        "    except OSError as exc:\n"
        "        return f'refused: {exc}'\n"
        "print(fetch('pkgs.example.test'))"
    )

    async def session() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(params) as client:
            return await execute(client, fetch), await execute(client, "print(fetch('other.example.test'))")

    fetched, refused = asyncio.run(session())
    assert fetched["stdout"] == "hello from outside the sandbox\n\n", fetched
    assert "403 other.example.test" in refused["stdout"] and "not in the task's egress grant" in refused["stdout"]


def test_serve_refuses_to_start_sessions_asking_beyond_the_grant(egress_admin: None, index_port: int) -> None:
    options = ["--egress-host", "api.example.test", "--egress-port", str(index_port)]
    done = subprocess.run(serve_command(*options), cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "PolicyWidened: spec.egress: 'api.example.test' not allowed by the cluster's egress ceiling" in done.stderr
