"""The sandbox's side of egress (docs/egress.md): a proxy on 127.0.0.1 that ordinary tools are pointed at.

Each connection's first request head gets the sandbox's current gateway token (`Proxy-Authorization: Bearer`,
read afresh: the kubelet rotates it) and goes to the gateway's egress proxy, over TCP in a cluster or over the
gateway's Unix socket locally (the local sandbox has no network but loopback); then bytes flow both ways as they
are. The gateway decides everything: this only carries. The token never appears in the proxy variables.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.parse
from collections.abc import Callable

MAX_HEAD_BYTES = 16 * 1024
_CHUNK = 64 * 1024
NO_PROXY = "localhost,127.0.0.1,::1"


def _upstream(address: str) -> socket.socket:
    """A connection to the gateway's egress proxy: `unix:///path` or `http://host:port`."""
    url = urllib.parse.urlsplit(address)
    if url.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(url.path)
        return sock
    return socket.create_connection((url.hostname or "", url.port or 3128), timeout=10)


def with_token(head: bytes, token: str) -> bytes:
    """A request head with the sandbox's token as its only Proxy-Authorization."""
    lines = head.split(b"\r\n")
    kept = [line for line in lines[1:] if line and not line.lower().startswith(b"proxy-authorization:")]
    return b"\r\n".join([lines[0], *kept, b"Proxy-Authorization: Bearer " + token.encode(), b"", b""])


def _copy(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _serve(client: socket.socket, address: str, token: Callable[[], str]) -> None:
    with client:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(4096)
            if not chunk or len(data) + len(chunk) > MAX_HEAD_BYTES:
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        try:
            upstream = _upstream(address)
        except OSError as exc:
            message = f"the gateway's egress proxy is unreachable: {exc}".encode("ascii", "replace")
            client.sendall(b"HTTP/1.1 502 " + message[:200] + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        with upstream:
            upstream.settimeout(None)
            upstream.sendall(with_token(head + b"\r\n\r\n", token()) + rest)
            back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
            back.start()
            _copy(client, upstream)
            back.join()


def start(address: str, token: Callable[[], str]) -> dict[str, str]:
    """Listen on a free loopback port; returns the environment that points ordinary tools at it (curl, urllib,
    requests, pip, npm)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept() -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=_serve, args=(client, address, token), daemon=True).start()

    threading.Thread(target=accept, name="egress-proxy", daemon=True).start()
    proxy = f"http://127.0.0.1:{port}"
    names = ("HTTPS_PROXY", "HTTP_PROXY", "PIP_PROXY", "npm_config_proxy", "npm_config_https_proxy")
    return {
        **{name: proxy for name in names},
        **{name.lower(): proxy for name in ("HTTPS_PROXY", "HTTP_PROXY")},
        "NO_PROXY": NO_PROXY,
        "no_proxy": NO_PROXY,
    }
