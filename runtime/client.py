"""The tool API agent code calls: list_servers, search_tools, get_tool, call_tool (docs/contracts.md), and the
gateway's long polls: a SandboxPool sandbox's wait for its task (await_assignment), a session's wait for its next
execution (long_poll).

Plain blocking HTTP to the gateway over a Unix socket (local mode) or TCP (cluster); the gateway holds
every credential and tokenizes personal data before anything reaches this process.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from typing import Any

from runtime.config import Environment
from runtime.contract import ASSIGNMENT_PATH
from runtime.vault_marks import HEADER as VAULT_HEADER
from runtime.vault_marks import VAULT_LOST, VaultMarks

_TIMEOUT_SECONDS = 300.0
# Answers the gateway gives before anything reached a tool (it says so with Retry-After): a server still
# connecting or reconnecting, the task's rate limit. Resent for up to this long, backing off to 8 s.
_RETRYABLE = frozenset({"server_unavailable", "rate_limited"})
_RETRY_FOR_SECONDS = 60.0
_RETRY_BACKOFF_CEILING = 8.0
# A long poll (a pool sandbox's task, a session's next execution): how long the gateway may hold each one, and the
# backoff while the gateway cannot be reached (starting, restarting): short, since a task or a caller is waiting.
LONG_POLL_WAIT_SECONDS = 20
_UNREACHABLE_BACKOFF_FIRST, _UNREACHABLE_BACKOFF_CEILING = 0.1, 2.0


class ToolError(Exception):
    """The gateway refused or failed a request; `code` is its error code (e.g. forbidden, tool_timeout)."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status = status
        self.code = code
        self.retry_after = retry_after


def _seconds(header: str | None) -> float | None:
    """A Retry-After of delta-seconds (the only form the gateway sends)."""
    try:
        return None if header is None else max(0.0, float(header))
    except ValueError:
        return None


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("gateway", timeout=_TIMEOUT_SECONDS)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class Gateway:
    """One keep-alive connection per thread to the gateway."""

    def __init__(self, env: Environment) -> None:
        self._env = env
        self._local = threading.local()
        self.tool_calls = 0
        self.vault = VaultMarks()  # what this sandbox has seen of its PII vault (runtime/vault_marks.py)

    def mark_ready(self) -> None:
        """Tell the pod's startup probe this sandbox is up and talking to the gateway (once; where it is asked to)."""
        if self._env.ready_file is not None and not self._env.ready_file.exists():
            self._env.ready_file.write_text("ready\n")

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """The thread's connection, and whether it was used before (a kept-alive one the server may close)."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        url = urllib.parse.urlsplit(self._env.gateway_url)
        if url.scheme == "unix":
            conn = _UnixConnection(url.path)
        elif url.scheme == "https":
            conn = http.client.HTTPSConnection(url.netloc, timeout=_TIMEOUT_SECONDS)
        else:
            conn = http.client.HTTPConnection(url.netloc, timeout=_TIMEOUT_SECONDS)
        self._local.conn = conn
        return conn, False

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        payload = None if body is None else json.dumps(body).encode()
        give_up_at = time.monotonic() + _RETRY_FOR_SECONDS
        backoff = 0.5
        while True:
            try:
                return self._send(method, path, payload)
            except ToolError as exc:
                wait = max(exc.retry_after or 0.0, backoff)
                if exc.code not in _RETRYABLE or exc.retry_after is None or time.monotonic() + wait > give_up_at:
                    raise
            time.sleep(wait)
            backoff = min(backoff * 2, _RETRY_BACKOFF_CEILING)

    def post_once(self, path: str, body: Any) -> None:
        """POST without resending a refused request (what may be dropped: streamed output)."""
        self._send("POST", path, json.dumps(body).encode())

    def poll(self, path: str, wait_seconds: int) -> dict[str, Any] | None:
        """One long poll of `path`: its answer, or None when the gateway had nothing within `wait_seconds` (204)."""
        answer: dict[str, Any] | None = self._send("GET", f"{path}?wait={wait_seconds}", None)
        return answer

    def _send(self, method: str, path: str, payload: bytes | None) -> Any:
        if self.vault.refuses(path):
            raise ToolError(409, VAULT_LOST, str(self.vault.lost))
        headers = {"Authorization": f"Bearer {self._env.bearer()}", "Content-Type": "application/json"}
        headers.update(self.vault.headers())
        while True:
            conn, reused = self._connection()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                # Only a kept-alive connection the server closed while idle is retried, on a fresh one:
                # a tool call is never sent twice because a fresh connection failed.
                if not reused:
                    raise
        answer = json.loads(raw) if raw else None
        self.vault.observe(response.getheader(VAULT_HEADER), answer if response.status >= 400 else None)
        if self.vault.refuses(path):
            raise ToolError(409, VAULT_LOST, str(self.vault.lost))
        if response.status >= 400:
            error = (answer or {}).get("error") or {}
            raise ToolError(
                response.status,
                error.get("code", "error"),
                error.get("message", raw.decode()[:500]),
                _seconds(response.getheader("Retry-After")),
            )
        return answer


_gateway: Gateway | None = None


def gateway() -> Gateway:
    global _gateway
    if _gateway is None:
        _gateway = Gateway(Environment.from_env())
    return _gateway


def await_assignment() -> dict[str, Any]:
    """This pool sandbox's task, once the operator has claimed the sandbox for one."""
    return long_poll(ASSIGNMENT_PATH)


def long_poll(path: str) -> dict[str, Any]:
    """Ask the gateway at `path` until it answers something. Nothing yet (204): ask again at once (the gateway
    holds each poll). The gateway away (no connection, 5xx, 429): ask again after a short backoff. Refused (401,
    403, 410, any other 4xx): ToolError, there is nothing to wait for."""
    gw = gateway()
    backoff = _UNREACHABLE_BACKOFF_FIRST
    while True:
        try:
            answer = gw.poll(path, LONG_POLL_WAIT_SECONDS)
        except ToolError as exc:
            if exc.status < 500 and exc.status != 429:
                raise
        except (OSError, http.client.HTTPException, ValueError):  # ValueError: a body that is not JSON
            pass
        else:
            gw.mark_ready()
            if answer is not None:
                return answer
            backoff = _UNREACHABLE_BACKOFF_FIRST
            continue
        time.sleep(backoff)
        backoff = min(backoff * 2, _UNREACHABLE_BACKOFF_CEILING)


def list_servers() -> list[dict[str, Any]]:
    """The MCP servers this task may use, with tool counts."""
    servers: list[dict[str, Any]] = gateway().request("GET", "/v1/servers")["servers"]
    return servers


def search_tools(query: str = "", detail: str = "signature", server: str | None = None) -> list[Any]:
    """Tools matching every word of `query`, best first; detail is "signature" (one text per tool: the call with its
    typed arguments, what it returns, its description's first sentence: enough to call it), "name", "description"
    or "full" (schemas)."""
    params = {"query": query, "detail": detail}
    if server:
        params["server"] = server
    tools: list[Any] = gateway().request("GET", "/v1/tools", query=params)["tools"]
    return tools


def get_tool(name: str) -> dict[str, Any]:
    """One tool's full definition; `name` is "server/tool"."""
    tool: dict[str, Any] = gateway().request("GET", f"/v1/tools/{_quote(name)}")
    return tool


def call_tool(name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call "server/tool"; returns structuredContent when the tool gives it, else the text content.

    A tool that ran and failed raises ToolError with code "tool_error".
    """
    gw = gateway()
    gw.tool_calls += 1
    answer = gw.request("POST", f"/v1/tools/{_quote(name)}/call", {"arguments": arguments or {}})
    if answer.get("isError"):
        raise ToolError(200, "tool_error", _text(answer.get("content") or []))
    if answer.get("structuredContent") is not None:
        return answer["structuredContent"]
    return _text(answer.get("content") or [])


def _quote(name: str) -> str:
    server, _, tool = name.partition("/")
    if not server or not tool:
        raise ValueError(f"tool names are 'server/tool', got {name!r}")
    return f"{urllib.parse.quote(server, safe='')}/{urllib.parse.quote(tool, safe='')}"


def _text(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(item.get("text", "")) for item in content if item.get("type") == "text")


def tool_api() -> dict[str, Any]:
    """The names agent code and skills find without importing anything."""
    return {
        "list_servers": list_servers,
        "search_tools": search_tools,
        "get_tool": get_tool,
        "call_tool": call_tool,
        "ToolError": ToolError,
    }
