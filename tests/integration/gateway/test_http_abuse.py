"""Pre-auth abuse of the gateway's HTTP front, with real sockets against the real server (issue 17): oversized
and trickled request heads, idle connections and connection floods are refused with their status and closed,
the gateway's memory stays bounded, and a normal client is served meanwhile."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.web import bounded_http
from tests.integration.gateway.conftest import GatewayThread, demo_spec, start_gateway
from tests.support.tasks import make_task


@pytest.fixture(scope="module")
def tcp_gateway(workdir: Path, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[GatewayThread]:
    # Small bounds so the test is quick; the limits' logic is what is under test, not their values.
    monkeypatch_module.setattr(bounded_http, "HEAD_SECONDS", 1.0)
    monkeypatch_module.setattr(bounded_http, "MAX_CONNECTIONS_PER_PEER", 20)
    with start_gateway({"demo": demo_spec(workdir / "abuse-outbox.jsonl")}, None) as gw:
        yield gw


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _address(gw: GatewayThread) -> tuple[str, int]:
    host, port = gw.base_url.removeprefix("http://").split(":")
    return host, int(port)


def _answer(sock: socket.socket, timeout: float = 10) -> bytes:
    """What the server sends until it closes the connection."""
    sock.settimeout(timeout)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def _healthy(gw: GatewayThread) -> None:
    with gw.client_for(make_task("bystander", ["demo"])) as c:
        assert c.get("/v1/servers").status_code == 200


def test_an_oversized_request_head_is_431_and_closed(tcp_gateway: GatewayThread) -> None:
    with socket.create_connection(_address(tcp_gateway)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:
            for _ in range(64):  # 4 MiB offered; the server stops it long before
                sock.sendall(b"a" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert _answer(sock).startswith(b"HTTP/1.1 431 ")
    _healthy(tcp_gateway)


def test_a_trickled_head_is_408_and_closed(tcp_gateway: GatewayThread) -> None:
    with socket.create_connection(_address(tcp_gateway)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        answer = b""
        sock.settimeout(0.2)
        while time.monotonic() - started < 10 and not answer:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                answer = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        assert answer.startswith(b"HTTP/1.1 408 ")


def test_an_idle_connection_is_closed(tcp_gateway: GatewayThread) -> None:
    with socket.create_connection(_address(tcp_gateway)) as sock:
        assert _answer(sock).startswith(b"HTTP/1.1 408 ")


def test_a_peer_past_its_connection_cap_is_refused_and_others_are_served(tcp_gateway: GatewayThread) -> None:
    held = [socket.create_connection(_address(tcp_gateway)) for _ in range(bounded_http.MAX_CONNECTIONS_PER_PEER)]
    try:
        with socket.create_connection(_address(tcp_gateway)) as extra:
            assert _answer(extra).startswith(b"HTTP/1.1 503 ")
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)  # the server sees the closes
    _healthy(tcp_gateway)


def test_a_head_flood_keeps_the_gateway_small(tcp_gateway: GatewayThread) -> None:
    """Connections each offering a 4 MiB header: each is cut at the head bound, the gateway stays small."""
    rss_before = _rss_kib()
    flood = []
    for _ in range(bounded_http.MAX_CONNECTIONS_PER_PEER - 2):
        sock = socket.create_connection(_address(tcp_gateway))
        sock.settimeout(5)
        try:
            sock.sendall(b"GET / HTTP/1.1\r\nX-Big: ")
            for _ in range(64):
                sock.sendall(b"a" * 65536)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass
        flood.append(sock)
    try:
        _healthy(tcp_gateway)
        grown = _rss_kib() - rss_before
    finally:
        for sock in flood:
            sock.close()
    assert grown < 32 * 1024, f"the gateway grew by {grown // 1024} MiB for {len(flood)} x 4 MiB of header"


def _rss_kib() -> int:
    """This process's resident set (the gateway runs in-process, in its own thread)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")
