"""The runtime's HTTP/1.1 connections to the gateway (one kept alive per thread), and when a request is sent again:
never once it may have reached the gateway.

What a failure means depends on where the request was:
- Connecting (name lookup, TCP or the Unix socket, TLS): nothing was sent. Tried again, backing off from 0.1 s to
  2 s, for up to RETRY_SECONDS; then ToolError `gateway_unreachable` (503). A gateway starting or restarting, or a
  name the cluster's DNS fails to answer for a moment, costs a wait, not the task.
- Sent, with no complete answer back (the connection broke or timed out, what came back was not HTTP, or was an
  answer whose end cannot be told from a cut): the gateway may have received it and run it (a tool call, a model
  call, a skill's seal, an execution's outcome). It is not sent again: ToolError `gateway_connection_lost` (502)
  says it may have run. Only a GET is sent again, within the same bound (RESENT_METHODS).
- A kept-alive connection is reused only while it has been idle less than IDLE_REUSE_SECONDS, under the gateway's
  keep-alive timeout, and only if nothing is readable on it (a server that closed it left an EOF there): otherwise
  a new one is opened first. So a connection the gateway closed while idle is found before a request goes into it;
  sending into one and failing could not be told apart from a gateway that died while running the request.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from runtime.errors import GATEWAY_CONNECTION_LOST, GATEWAY_UNREACHABLE, ToolError
from runtime.vault_marks import HEADER as VAULT_HEADER

# How long a request keeps trying to reach the gateway when no connection opens (and a GET to get an answer).
RETRY_SECONDS = 30.0
BACKOFF_FIRST_SECONDS, BACKOFF_CEILING_SECONDS = 0.1, 2.0
# The gateway (uvicorn, timeout_keep_alive) closes a connection idle for 5 s; this stays clear of that moment.
IDLE_REUSE_SECONDS = 4.0
# Read-only on the gateway, so a resend runs nothing twice: the listings, a tool's definition, the wrappers, and the
# long polls (an assignment is read; a session's next execution is handed out once, so asking again may miss one
# whose answer was lost, whose caller then times out, but never runs it twice).
RESENT_METHODS = frozenset({"GET"})
_CONNECT_TIMEOUT_SECONDS = 5.0
ANSWER_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    retry_after: str | None
    vault_marks: str | None  # the gateway's Mcpexec-Vault header (runtime/vault_marks.py)


def connection_lost(method: str, path: str, cause: str) -> ToolError:
    """The request went out and no usable answer came back; worded as the gateway's own `server_connection_lost`."""
    ran = "" if method in RESENT_METHODS else "; it may have run and was not resent"
    return ToolError(
        502, GATEWAY_CONNECTION_LOST, f"connection to the gateway was lost during {method} {path} ({cause}){ran}"
    )


class UnframedAnswer(http.client.HTTPException):
    """An answer that ends only where the connection does (the gateway always sends a length, or chunks)."""


class _Backoff:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._give_up_at = time.monotonic() + seconds
        self._next = BACKOFF_FIRST_SECONDS

    def wait(self) -> bool:
        """Sleep before the next try and return True; False once the time is up."""
        remaining = self._give_up_at - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(self._next, remaining))
        self._next = min(self._next * 2, BACKOFF_CEILING_SECONDS)
        return True


# auto_open = 0: a connection is opened by Connections only, never again by http.client while sending a request.
class _UnixConnection(http.client.HTTPConnection):
    auto_open = 0

    def __init__(self, path: str) -> None:
        super().__init__("gateway", timeout=_CONNECT_TIMEOUT_SECONDS)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class _TcpConnection(http.client.HTTPConnection):
    auto_open = 0


class _TlsConnection(http.client.HTTPSConnection):
    auto_open = 0


@dataclass(frozen=True)
class _Idle:
    connection: http.client.HTTPConnection
    since: float


def _nothing_to_read(sock: socket.socket) -> bool:
    """An idle connection has nothing to read: anything readable is the server's close (EOF, reset) or bytes no
    request asked for, and either way it is not used again."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return not poller.poll(0)


class Connections:
    """One keep-alive connection per thread to the gateway at `url` (`http://host:port`, `https://...` or
    `unix:///path`)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._parts = urllib.parse.urlsplit(url)
        self._local = threading.local()

    def exchange(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        retry_for: float,
        answer_for: float = ANSWER_TIMEOUT_SECONDS,
    ) -> Answer:
        """Send one request and read its whole answer (each read waiting up to `answer_for` seconds), trying for up
        to `retry_for` seconds where that is safe."""
        backoff = _Backoff(retry_for)
        while True:
            connection = self._reused() or self._connected(backoff)
            connection.sock.settimeout(answer_for)
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                if response.length is None and not response.chunked:
                    raise UnframedAnswer("no Content-Length: a cut would pass for its end")
                answer = Answer(
                    response.status,
                    response.read(),
                    response.getheader("Retry-After"),
                    response.getheader(VAULT_HEADER),
                )
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                if method in RESENT_METHODS and backoff.wait():
                    continue
                raise connection_lost(method, path, f"{type(exc).__name__}: {exc}") from None
            if connection.sock is not None:  # http.client closed it if the answer said so
                self._local.idle = _Idle(connection, time.monotonic())
            return answer

    def _reused(self) -> http.client.HTTPConnection | None:
        idle: _Idle | None = getattr(self._local, "idle", None)
        self._local.idle = None
        if idle is None:
            return None
        sock = idle.connection.sock
        if sock is not None and time.monotonic() - idle.since < IDLE_REUSE_SECONDS and _nothing_to_read(sock):
            return idle.connection
        idle.connection.close()
        return None

    def _connected(self, backoff: _Backoff) -> http.client.HTTPConnection:
        while True:
            connection = self._new()
            try:
                connection.connect()
            except OSError as exc:
                connection.close()
                if backoff.wait():
                    continue
                tried = f" for {backoff.seconds:g} s" if backoff.seconds else ""
                cause = f"{type(exc).__name__}: {exc}"
                message = f"could not connect to the gateway at {self._url}{tried} ({cause}); nothing was sent"
                raise ToolError(503, GATEWAY_UNREACHABLE, message) from None
            return connection

    def _new(self) -> http.client.HTTPConnection:
        if self._parts.scheme == "unix":
            return _UnixConnection(self._parts.path)
        if self._parts.scheme == "https":
            return _TlsConnection(self._parts.netloc, timeout=_CONNECT_TIMEOUT_SECONDS)
        return _TcpConnection(self._parts.netloc, timeout=_CONNECT_TIMEOUT_SECONDS)
