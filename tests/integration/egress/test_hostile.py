"""What a sandbox must never get through the egress proxy: addresses that are not public whatever a granted name
resolves to, a tunnel to another host than its TLS server name, a host outside its grant, more than its budgets,
a connection held open idle, the gateway's own ports or Redis."""

from __future__ import annotations

import socket
import ssl
import urllib.parse

import pytest

from gateway.egress.budgets import MemoryEgressBudgets
from tests.integration.egress.conftest import basic, egress_gateway, read_status, request
from tests.support.components import free_port, redis_server
from tests.support.egress_servers import CaFiles

ADMIN = {"hosts": ["*.example.test"], "ports": [443, 80], "namespaces": {"team": {"hosts": ["*.example.test"]}}}
GRANT = {"hosts": ["*.example.test"], "ports": [443]}


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("fd00:ec2::254", "private"),
        ("0.0.0.0", "not a unicast address"),
    ],
)
def test_a_granted_name_resolving_to_an_address_that_is_not_public_is_refused(address: str, why: str) -> None:
    with egress_gateway(admin=ADMIN, resolve={"rebind.example.test": [address]}) as gw:
        status, sock = request(gw.proxy_port, "CONNECT rebind.example.test:443", gw.token(GRANT))
        sock.close()
        assert status.startswith("HTTP/1.1 403 rebind.example.test resolves to a refused address")
        assert why in status
        assert 'verdict="address_refused"} 1.0' in gw.metrics('verdict="address_refused"')


def test_the_cluster_networks_stay_closed_even_to_allowed_private_addresses() -> None:
    settings = {
        "admin": ADMIN,
        "resolve": {"svc.example.test": ["10.96.0.10"], "kube.example.test": ["10.96.0.1"]},
        "allowed_addresses": ["10.0.0.0/8"],
        "cluster_networks": ["10.96.0.0/12", "10.244.0.0/16"],
    }
    with egress_gateway(**settings) as gw:
        token = gw.token(GRANT)
        for name in ("svc.example.test", "kube.example.test"):
            status, sock = request(gw.proxy_port, f"CONNECT {name}:443", token)
            sock.close()
            assert status.startswith(f"HTTP/1.1 403 {name} resolves to a refused address")
            assert "in the cluster's networks" in status


def test_a_name_resolving_to_public_and_private_addresses_is_never_taken_to_the_private_one() -> None:
    """The proxy connects to a checked address only: here the public one (unreachable from this machine), never
    127.0.0.1, where something does answer (the test's own listener)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        admin = {
            "hosts": ["*.example.test"],
            "ports": [port],
            "namespaces": {"team": {"hosts": ["*.example.test"], "ports": [port]}},
        }
        settings = {
            "admin": admin,
            "resolve": {"mixed.example.test": ["127.0.0.1", "8.8.8.8"]},
            "limits": {"connect_timeout_seconds": 1},
        }
        with egress_gateway(**settings) as gw:
            token = gw.token({"hosts": ["mixed.example.test"], "ports": [port]})
            status, sock = request(gw.proxy_port, f"GET http://mixed.example.test:{port}/", token)
            sock.close()
            assert status.startswith("HTTP/1.1 502 8.8.8.8: ")


def test_an_ip_literal_or_a_host_outside_the_grant_is_refused(https_port: int) -> None:
    admin = {
        "hosts": ["*.example.test"],
        "ports": [https_port],
        "namespaces": {"team": {"hosts": ["pkgs.example.test"], "ports": [https_port]}},
    }
    with egress_gateway(
        admin=admin, resolve={"pkgs.example.test": ["127.0.0.1"]}, allowed_addresses=["127.0.0.1/32"]
    ) as gw:
        token = gw.token({"hosts": ["pkgs.example.test"], "ports": [https_port]})
        for target in (
            f"other.example.test:{https_port}",
            f"pkgs.example.test:{https_port + 1}",
            f"127.0.0.1:{https_port}",
        ):
            status, sock = request(gw.proxy_port, f"CONNECT {target}", token)
            sock.close()
            assert status.startswith("HTTP/1.1 403"), target
        status, sock = request(gw.proxy_port, f"GET http://127.0.0.1:{https_port}/hello.txt", token)
        sock.close()
        assert status == "HTTP/1.1 403 egress is to host names only"


def test_a_task_that_asked_for_no_egress_gets_none_even_within_the_namespace_grant() -> None:
    with egress_gateway(admin=ADMIN, resolve={"pkgs.example.test": ["127.0.0.1"]}) as gw:
        status, sock = request(gw.proxy_port, "CONNECT pkgs.example.test:443", gw.token({}))
        sock.close()
        assert status == "HTTP/1.1 403 pkgs.example.test:443 is not in the task's egress grant"
        status, sock = request(gw.proxy_port, "CONNECT pkgs.example.test:443", gw.token(GRANT, namespace="elsewhere"))
        sock.close()
        assert status == "HTTP/1.1 403 pkgs.example.test:443 is not in the task's egress grant"


def test_no_token_a_forged_one_or_a_basic_one_with_a_bad_password_is_refused() -> None:
    with egress_gateway(admin=ADMIN) as gw:
        status, sock = request(gw.proxy_port, "CONNECT pkgs.example.test:443", None)
        sock.close()
        assert status.startswith("HTTP/1.1 407 missing Proxy-Authorization")
        status, sock = request(gw.proxy_port, "CONNECT pkgs.example.test:443", "not-a-token")
        sock.close()
        assert status == "HTTP/1.1 407 invalid token"
        sock = socket.create_connection(("127.0.0.1", gw.proxy_port))
        sock.sendall(f"CONNECT a.example.test:443 HTTP/1.1\r\nProxy-Authorization: {basic('forged')}\r\n\r\n".encode())
        assert read_status(sock) == "HTTP/1.1 407 invalid token"
        sock.close()


def _tunnel(gw_port: int, target: str, token: str, server_name: str, ca: CaFiles) -> ssl.SSLSocket:
    status, sock = request(gw_port, f"CONNECT {target}", token)
    assert status == "HTTP/1.1 200 Connection established"
    context = ssl.create_default_context(cafile=str(ca.ca_file))
    context.check_hostname = False  # the server's certificate names both; the proxy is what is checked here
    return context.wrap_socket(sock, server_hostname=server_name)


def test_a_tunnel_whose_tls_server_name_is_not_its_connect_host_is_cut_before_reaching_it(
    https_port: int, test_ca: CaFiles
) -> None:
    admin = {
        "hosts": ["*.example.test"],
        "ports": [https_port],
        "namespaces": {"team": {"hosts": ["*.example.test"], "ports": [https_port]}},
    }
    resolve = {"pkgs.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"]}
    with egress_gateway(admin=admin, resolve=resolve, allowed_addresses=["127.0.0.1/32"]) as gw:
        token = gw.token({"hosts": ["pkgs.example.test"], "ports": [https_port]})
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _tunnel(gw.proxy_port, f"pkgs.example.test:{https_port}", token, "other.example.test", test_ca)
        # Not TLS at all: cut too.
        _status, sock = request(gw.proxy_port, f"CONNECT pkgs.example.test:{https_port}", token)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: pkgs.example.test\r\n\r\n")
        assert sock.recv(100) == b""
        sock.close()
        metrics = gw.metrics('verdict="sni_mismatch"} 1.0', 'verdict="not_tls"} 1.0')
        assert 'verdict="sni_mismatch"} 1.0' in metrics and 'verdict="not_tls"} 1.0' in metrics
        assert 'verdict="done"' not in metrics  # nothing reached the host


def test_budgets_are_enforced(https_port: int, http_port: int, test_ca: CaFiles) -> None:
    ports = [https_port, http_port]
    admin = {
        "hosts": ["*.example.test"],
        "ports": ports,
        "namespaces": {"team": {"hosts": ["*.example.test"], "ports": ports}},
    }
    settings = {
        "admin": admin,
        "resolve": {"pkgs.example.test": ["127.0.0.1"]},
        "allowed_addresses": ["127.0.0.1/32"],
        "limits": {"connections_per_task": 2, "bytes_per_task": 200_000},
    }
    with egress_gateway(**settings) as gw:
        token = gw.token({"hosts": ["pkgs.example.test"], "ports": ports})
        tls = _tunnel(gw.proxy_port, f"pkgs.example.test:{https_port}", token, "pkgs.example.test", test_ca)
        tls.sendall(b"GET /big.bin HTTP/1.1\r\nHost: pkgs.example.test\r\nConnection: close\r\n\r\n")
        received = b""
        with pytest.raises((ssl.SSLError, ConnectionError)):
            while chunk := tls.recv(65536):
                received += chunk
            raise ConnectionError("cut")
        assert 0 < len(received) < 200_000  # cut at the byte budget, well before the 1 MiB file's end
        tls.close()
        status, sock = request(gw.proxy_port, f"GET http://pkgs.example.test:{http_port}/hello.txt", token)
        sock.close()
        assert status == "HTTP/1.1 429 the task's egress byte budget is spent"
        status, sock = request(gw.proxy_port, f"GET http://pkgs.example.test:{http_port}/hello.txt", token)
        sock.close()
        assert status == "HTTP/1.1 429 the task's egress connection budget is spent"
        lines = [
            'connections_total{kind="tunnel",verdict="bytes_spent"} 1.0',
            'connections_total{kind="http",verdict="bytes_spent"} 1.0',
            'connections_total{kind="http",verdict="connections_spent"} 1.0',
        ]
        metrics = gw.metrics(*lines)
        assert all(line in metrics for line in lines)


def test_a_tasks_budget_is_dropped_with_its_other_state_when_it_ends(http_port: int) -> None:
    """The core's forget (its reaper's, at the task's token expiry, and a local task's or session's end) drops the
    task's egress counts: a gateway serving task after task holds none of the ended ones."""
    grant = {"hosts": ["pkgs.example.test"], "ports": [http_port]}
    settings = {
        "admin": {**grant, "namespaces": {"team": grant}},
        "resolve": {"pkgs.example.test": ["127.0.0.1"]},
        "allowed_addresses": ["127.0.0.1/32"],
    }
    with egress_gateway(**settings) as gw:
        token = gw.token(grant)
        status, sock = request(gw.proxy_port, f"GET http://pkgs.example.test:{http_port}/hello.txt", token)
        sock.close()
        assert status == "HTTP/1.0 200 OK"  # the test host's answer, as it is
        budgets = gw.gateway.core.egress_budgets
        (scope,) = gw.gateway.core.active  # the task's, admitted by the proxy
        assert isinstance(budgets, MemoryEgressBudgets) and scope.startswith("team/fetch/") and scope in budgets
        gw.run(gw.gateway.unregister_task("team/fetch"))
        assert scope not in budgets
        status, sock = request(gw.proxy_port, f"GET http://pkgs.example.test:{http_port}/hello.txt", token)
        sock.close()
        assert status.startswith("HTTP/1.1 407")  # the ended task's token is refused: its budget is not reborn


def test_a_connection_idle_past_its_timeout_is_closed(https_port: int) -> None:
    admin = {
        "hosts": ["*.example.test"],
        "ports": [https_port],
        "namespaces": {"team": {"hosts": ["*.example.test"], "ports": [https_port]}},
    }
    settings = {
        "admin": admin,
        "resolve": {"pkgs.example.test": ["127.0.0.1"]},
        "allowed_addresses": ["127.0.0.1/32"],
        "limits": {"idle_timeout_seconds": 0.5},
    }
    with egress_gateway(**settings) as gw:
        token = gw.token({"hosts": ["pkgs.example.test"], "ports": [https_port]})
        status, sock = request(gw.proxy_port, f"CONNECT pkgs.example.test:{https_port}", token)
        assert status == "HTTP/1.1 200 Connection established"
        assert sock.recv(100) == b""  # no ClientHello sent: closed by the proxy
        sock.close()
        slow = socket.create_connection(("127.0.0.1", gw.proxy_port))
        slow.sendall(b"CONNECT pkgs.example.test")  # a head never finished
        assert read_status(slow) == "HTTP/1.1 408 no request in time"
        slow.close()
        lines = ['{kind="tunnel",verdict="idle_timeout"} 2.0']
        metrics = gw.metrics(*lines)
        assert all(line in metrics for line in lines)


def test_the_gateways_own_ports_and_redis_are_closed_even_on_allowed_addresses() -> None:
    api_port, proxy_port = free_port(), free_port()
    with redis_server() as redis_url:
        redis_port = urllib.parse.urlsplit(redis_url).port or 6379
        ports = [api_port, proxy_port, redis_port]
        admin = {
            "hosts": ["*.example.test"],
            "ports": ports,
            "namespaces": {"team": {"hosts": ["*.example.test"], "ports": ports}},
        }
        settings = {"admin": admin, "resolve": {"gw.example.test": ["127.0.0.1"]}, "allowed_addresses": ["127.0.0.0/8"]}
        with egress_gateway(redis_url, api_port, proxy_port, **settings) as gw:
            token = gw.token({"hosts": ["gw.example.test"], "ports": ports})
            for port in ports:
                status, sock = request(gw.proxy_port, f"GET http://gw.example.test:{port}/v1/tools", token)
                sock.close()
                refused = "gw.example.test resolves to a refused address"
                assert status == f"HTTP/1.1 403 {refused}: 127.0.0.1:{port} is the gateway's own service"
