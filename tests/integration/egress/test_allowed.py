"""What a granted task gets through the egress proxy, with the runtime's own loopback forwarder in front of it (as
inside a sandbox): an HTTPS page through a tunnel, opaque to the gateway; a plain-HTTP page tokenized like a tool
result, an archive carried unchanged; and a real `pip install` from a PyPI-style index on this machine."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime import egress
from tests.integration.egress.conftest import EgressGateway, egress_gateway
from tests.support.egress_servers import CaFiles, file_server, simple_index


@pytest.fixture(scope="module")
def index_port(tmp_path_factory: pytest.TempPathFactory, test_ca: CaFiles) -> Iterator[int]:
    root = tmp_path_factory.mktemp("index")
    simple_index(root, "egresspkg", "1.0.0", "ANSWER = 42\n")
    with file_server(root, test_ca) as port:
        yield port


@pytest.fixture(scope="module")
def gateway(https_port: int, http_port: int, index_port: int) -> Iterator[EgressGateway]:
    ports = [https_port, http_port, index_port]
    grant = {"hosts": ["pkgs.example.test", "other.example.test"], "ports": ports}
    settings = {
        "admin": {**grant, "namespaces": {"team": grant}},
        "resolve": {"pkgs.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"]},
        "allowed_addresses": ["127.0.0.1/32"],
    }
    with egress_gateway(**settings) as gw:
        yield gw


@pytest.fixture(scope="module")
def proxy_env(gateway: EgressGateway, https_port: int, http_port: int, index_port: int) -> dict[str, str]:
    """The environment the runtime gives a task granted pkgs.example.test (not other.example.test)."""
    token = gateway.token({"hosts": ["pkgs.example.test"], "ports": [https_port, http_port, index_port]})
    return egress.start(f"http://127.0.0.1:{gateway.proxy_port}", lambda: token)


def _opener(env: dict[str, str], ca: CaFiles) -> urllib.request.OpenerDirector:
    proxies = urllib.request.ProxyHandler({"https": env["HTTPS_PROXY"], "http": env["HTTP_PROXY"]})
    context = ssl.create_default_context(cafile=str(ca.ca_file))
    return urllib.request.build_opener(proxies, urllib.request.HTTPSHandler(context=context))


def test_an_https_page_comes_through_a_tunnel_opaque_to_the_gateway(
    proxy_env: dict[str, str], test_ca: CaFiles, https_port: int, gateway: EgressGateway
) -> None:
    with _opener(proxy_env, test_ca).open(f"https://pkgs.example.test:{https_port}/hello.txt", timeout=30) as answer:
        body = answer.read().decode()
    assert body == "hello through the gateway; write to jane.doe@example.com\n"  # inside TLS: not tokenized
    assert 'connections_total{kind="tunnel",verdict="done"} 1.0' in gateway.metrics(
        'connections_total{kind="tunnel",verdict="done"} 1.0'
    )


def test_a_plain_http_page_is_tokenized_and_an_archive_is_carried_as_it_is(
    proxy_env: dict[str, str], test_ca: CaFiles, http_port: int, site: Path
) -> None:
    opener = _opener(proxy_env, test_ca)
    with opener.open(f"http://pkgs.example.test:{http_port}/hello.txt", timeout=30) as answer:
        assert answer.read().decode() == "hello through the gateway; write to [EMAIL_1]\n"
    with opener.open(f"http://pkgs.example.test:{http_port}/blob.zip", timeout=30) as answer:
        assert answer.read() == (site / "blob.zip").read_bytes()


def test_a_host_outside_the_tasks_grant_is_refused_with_its_reason(
    proxy_env: dict[str, str], test_ca: CaFiles, https_port: int
) -> None:
    with pytest.raises(urllib.error.URLError, match=r"other\.example\.test:\d+ is not in the task's egress grant"):
        _opener(proxy_env, test_ca).open(f"https://other.example.test:{https_port}/hello.txt", timeout=30)


def _pip(env: dict[str, str], index: str, ca: CaFiles, target: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check"]
    command += ["-vv", "--target", str(target), "--index-url", index, "--cert", str(ca.ca_file), "--retries", "0"]
    # This machine's CA and wheel settings would win over the test's (requests prefers REQUESTS_CA_BUNDLE to --cert).
    local = {
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "PIP_CERT",
        "PIP_FIND_LINKS",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
    }
    environment = {k: v for k, v in os.environ.items() if k not in local} | env | {"PIP_CONFIG_FILE": os.devnull}
    return subprocess.run([*command, "egresspkg"], env=environment, capture_output=True, text=True, timeout=300)


def test_pip_installs_from_an_allowed_index_and_fails_clearly_for_another(
    proxy_env: dict[str, str], test_ca: CaFiles, index_port: int, tmp_path: Path
) -> None:
    installed = _pip(proxy_env, f"https://pkgs.example.test:{index_port}/simple", test_ca, tmp_path / "ok")
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr
    assert (tmp_path / "ok" / "egresspkg.py").read_text() == "ANSWER = 42\n"
    refused = _pip(proxy_env, f"https://other.example.test:{index_port}/simple", test_ca, tmp_path / "no")
    assert refused.returncode != 0
    assert "Tunnel connection failed: 403 other.example.test" in refused.stdout + refused.stderr
