"""Egress: the same HTTPS fetches through the gateway's egress proxy vs straight to the host, in the same run.

The host: an HTTPS file server with a test CA (tests/support/egress_servers.py) in a process of its own. The proxy:
a LocalGateway's egress proxy on loopback TCP in a process of its own, with the host's name mapped to loopback by
the resolver overrides (MCPEXEC_EGRESS_RESOLVE, as in the tests). The client: this process, one thread per caller,
each fetch its own connection (the proxy carries one request per connection): direct, TCP to the host then TLS;
proxied, TCP to the proxy, `CONNECT` with the task's token, then TLS to the host through the tunnel. The client's
TLS and HTTP work is the same on both sides; what differs is the proxy's hop and its checks (token, grant,
budget, name resolution and address checks, the ClientHello's server name, audit and metrics).

- `connection`: a 1 KiB file, a new connection each, N callers for SECONDS: fetches/s, p50/p99, and
  `p50_overhead_ms` (proxied p50 - direct p50: what the proxy adds to opening a connection and fetching).
- `throughput`: a 64 MiB file, N callers for SECONDS: MiB/s, and the proxy's CPU per MiB.

Levels 1 and 8 callers, direct and proxied alternating for ROUNDS rounds (figures are medians). Every level says
what it measured even when a side completed nothing (null figures and ratios, its errors counted), so a busy
machine still gives a report; the CPU each process used says which one bounded the figures.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.egress.settings import EgressSettings
from gateway.settings import Limits
from gateway.telemetry import logs
from tests.bench._process_cpu import cpu_seconds
from tests.integration.egress.conftest import EgressGateway
from tests.support.egress_servers import CaFiles, file_server, make_ca

HOST = "pkgs.example.test"
LEVELS = (1, 8)
SECONDS = 4.0
ROUNDS = 3
SMALL, LARGE = "small.bin", "large.bin"
SIZES = {SMALL: 1024, LARGE: 64 << 20}
MiB = 1 << 20
Fetch = Callable[[str], int]


def _tls_fetch(sock: socket.socket, context: ssl.SSLContext, path: str) -> int:
    """GET `path` over TLS on `sock` (closed after); the body's size, headers excluded."""
    with context.wrap_socket(sock, server_hostname=HOST) as tls:
        tls.sendall(f"GET /{path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = tls.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the answer's head")
            received += chunk
        head, body = received.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.0 200") and not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
        size = len(body)
        while chunk := tls.recv(MiB):
            size += len(chunk)
        return size


def direct(port: int, context: ssl.SSLContext) -> Fetch:
    return lambda path: _tls_fetch(socket.create_connection(("127.0.0.1", port), timeout=30), context, path)


def proxied(proxy_port: int, port: int, token: str, context: ssl.SSLContext) -> Fetch:
    def fetch(path: str) -> int:
        sock = socket.create_connection(("127.0.0.1", proxy_port), timeout=30)
        auth = f"Proxy-Authorization: Bearer {token}\r\n"
        sock.sendall(f"CONNECT {HOST}:{port} HTTP/1.1\r\nHost: {HOST}:{port}\r\n{auth}\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                sock.close()
                raise ConnectionError("the proxy closed before answering")
            answer += chunk
        status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
        if " 200 " not in f"{status} ":
            sock.close()
            raise ConnectionError(status)
        return _tls_fetch(sock, context, path)

    return fetch


def _level(fetch: Fetch, path: str, callers: int, pids: dict[str, int]) -> dict[str, Any]:
    """`callers` threads fetching `path` for SECONDS: completed fetches, bytes, latencies, errors, CPU."""
    latencies: list[float] = []
    received = [0]
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.perf_counter() + SECONDS

    def caller() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                size = fetch(path)
            except OSError as exc:  # ConnectionError among them: its message is the refusal's status line
                kind = str(exc)[:80] if type(exc) is ConnectionError else type(exc).__name__
                with lock:
                    errors[kind] = errors.get(kind, 0) + 1
                continue
            with lock:
                latencies.append(time.perf_counter() - started)
                received[0] += size

    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    started = time.perf_counter()
    threads = [threading.Thread(target=caller) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cpu = {name: round(cpu_seconds(pid) - cpu_before[name], 3) for name, pid in pids.items()}
    ordered = sorted(latencies)
    return {
        "fetches_per_s": round(len(ordered) / elapsed, 1),
        "mib_per_s": round(received[0] / MiB / elapsed, 1),
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 2) if ordered else None,
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2) if ordered else None,
        "cpu_busy": {name: round(seconds / elapsed, 2) for name, seconds in cpu.items()},
        "errors": sum(errors.values()),
        "error_kinds": errors,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Figure by figure, the median of the rounds that have it (None if none has); errors summed."""
    figures: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [run[key] for run in runs]
        if key == "error_kinds":
            figures[key] = {kind: sum(v.get(kind, 0) for v in values) for value in values for kind in value}
        elif key == "errors":
            figures[key] = sum(values)
        elif isinstance(first, dict):
            figures[key] = _median(values)
        else:
            known = [value for value in values if value is not None]
            figures[key] = statistics.median(known) if known else None
    return figures


def _ratio(over: float | None, under: float | None) -> float | None:
    return round(over / under, 3) if over and under else None


def _compare(path: str, sides: dict[str, Fetch], pids: dict[str, int]) -> dict[str, Any]:
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {side: {c: [] for c in LEVELS} for side in sides}
    for _ in range(ROUNDS):
        for callers in LEVELS:
            for side, fetch in sides.items():
                runs[side][callers].append(_level(fetch, path, callers, pids))
    figures = {side: {str(c): _median(runs[side][c]) for c in LEVELS} for side in sides}
    d, p = figures["direct"], figures["proxied"]
    return figures | {
        "throughput_ratio": {str(c): _ratio(p[str(c)]["mib_per_s"], d[str(c)]["mib_per_s"]) for c in LEVELS},
        "fetch_rate_ratio": {str(c): _ratio(p[str(c)]["fetches_per_s"], d[str(c)]["fetches_per_s"]) for c in LEVELS},
        "p50_ratio": {str(c): _ratio(p[str(c)]["p50_ms"], d[str(c)]["p50_ms"]) for c in LEVELS},
        "p50_overhead_ms": {
            str(c): None
            if None in (p[str(c)]["p50_ms"], d[str(c)]["p50_ms"])
            else round(p[str(c)]["p50_ms"] - d[str(c)]["p50_ms"], 2)
            for c in LEVELS
        },
    }


@contextmanager
def _child(*args: str) -> Iterator[tuple[list[str], int]]:
    """`python -m tests.bench.egress <args>`: the words of its first line, and its pid."""
    process = subprocess.Popen(
        [sys.executable, "-m", __name__, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().split(), process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-egress-") as tmp:
        workdir = Path(tmp)
        ca = make_ca(workdir, [HOST])
        site = workdir / "site"
        site.mkdir()
        for name, size in SIZES.items():
            (site / name).write_bytes(os.urandom(size))
        context = ssl.create_default_context(cafile=str(ca.ca_file))
        with (
            _child("host", str(workdir)) as ((host_port,), host_pid),
            _child("proxy", host_port) as (
                (proxy_port, token),
                proxy_pid,
            ),
        ):
            pids = {"host": host_pid, "proxy": proxy_pid, "client": os.getpid()}
            sides = {
                "direct": direct(int(host_port), context),
                "proxied": proxied(int(proxy_port), int(host_port), token, context),
            }
            connection = _compare(SMALL, sides, pids)
            print(json.dumps({"connection": connection}), flush=True)
            throughput = _compare(LARGE, sides, pids)
    return {
        "connection": connection,
        "throughput": throughput,
        "note": f"each figure is the median of {ROUNDS} rounds of {SECONDS:.0f} s, direct and proxied alternating; "
        f"connection: a {SIZES[SMALL]} B file, throughput: a {SIZES[LARGE] >> 20} MiB file, a new TLS connection "
        "per fetch; client (this process, a thread per caller), proxy (a LocalGateway's egress proxy) and host "
        "(a Python HTTPS server) share the machine's CPUs; cpu_busy is CPU seconds per second (1.0 = one core); "
        "errors are summed over the rounds and are not fetches",
    }


def _serve_host(workdir: Path) -> None:
    ca = CaFiles(workdir / "ca.pem", workdir / "server.pem", workdir / "server.key")
    with file_server(workdir / "site", ca) as port:
        print(port, flush=True)
        signal.sigwait({signal.SIGTERM})


def _serve_proxy(host_port: int) -> None:
    """The gateway's egress proxy, granting one task the host; logs as in production (an audit record per
    connection), to stderr, which the bench discards."""
    logs.configure()
    grant = {"hosts": [HOST], "ports": [host_port]}
    settings = EgressSettings.model_validate(
        {
            "admin": {**grant, "namespaces": {"bench": grant}},
            "resolve": {HOST: ["127.0.0.1"]},
            "allowed_addresses": ["127.0.0.1/32"],
            "limits": {"connections_per_task": 1 << 30, "bytes_per_task": 1 << 50},
        }
    )
    # Not the task's request rate (100/s by default, which every connection is charged against): the proxy's cost.
    with EgressGateway(settings, limits=Limits(requests_per_second=1_000_000)) as gateway:
        token = gateway.token(grant, namespace="bench")
        print(gateway.proxy_port, token, flush=True)
        signal.sigwait({signal.SIGTERM})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if sys.argv[1] == "host":
        _serve_host(Path(sys.argv[2]))
    else:
        _serve_proxy(int(sys.argv[2]))
