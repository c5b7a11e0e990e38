"""The tool API agent code calls: list_servers, search_tools, get_tool, call_tool (docs/contracts.md), and the
gateway's long polls: a SandboxPool sandbox's wait for its task (await_assignment), a session's wait for its next
execution (long_poll).

Plain blocking HTTP to the gateway over a Unix socket (local mode) or TCP (cluster); the gateway holds
every credential and tokenizes personal data before anything reaches this process.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from typing import Any

from runtime import trace
from runtime.config import Environment
from runtime.contract import ASSIGNMENT_PATH, LLM_PATH, TRACEPARENT_HEADER, TRACES_PATH
from runtime.errors import APPROVAL_ANSWERS, ApprovalDenied, ApprovalNotPlanned, ApprovalTimeout, Planned
from runtime.errors import ToolError as ToolError  # agent code, skills and session.py know it as client.ToolError
from runtime.transport import (
    ANSWER_TIMEOUT_SECONDS,
    BACKOFF_CEILING_SECONDS,
    BACKOFF_FIRST_SECONDS,
    RETRY_SECONDS,
    Connections,
    connection_lost,
)
from runtime.vault_marks import VAULT_LOST, VaultMarks

# Answers the gateway gives before anything reached a tool (it says so with Retry-After): a server still
# connecting or reconnecting, the task's rate limit. Resent for up to this long, backing off to 8 s.
_RETRYABLE = frozenset({"server_unavailable", "rate_limited"})
_RETRY_FOR_SECONDS = 60.0
_RETRY_BACKOFF_CEILING = 8.0
# A long poll (a pool sandbox's task, a session's next execution): how long the gateway may hold each one. While
# the gateway cannot be reached (starting, restarting) it is asked again with the transport's short backoff, since
# a task or a caller is waiting, for as long as it takes.
LONG_POLL_WAIT_SECONDS = 20


def _seconds(header: str | None) -> float | None:
    """A Retry-After of delta-seconds (the only form the gateway sends)."""
    try:
        return None if header is None else max(0.0, float(header))
    except ValueError:
        return None


class Gateway:
    """The gateway's API over one keep-alive connection per thread (runtime/transport.py: what is sent again)."""

    def __init__(self, env: Environment) -> None:
        self._env = env
        self._connections = Connections(env.gateway_url)
        self.tool_calls = 0
        # The plan the code's calls are made in (runtime/plan.py), if it runs as one.
        self.plan_id: str | None = None
        self.vault = VaultMarks()  # what this sandbox has seen of its PII vault (runtime/vault_marks.py)

    def mark_ready(self) -> None:
        """Tell the pod's startup probe this sandbox is up and talking to the gateway (once; where it is asked to)."""
        if self._env.ready_file is not None and not self._env.ready_file.exists():
            self._env.ready_file.write_text("ready\n")

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        payload = None if body is None else json.dumps(body).encode()
        give_up_at = time.monotonic() + _RETRY_FOR_SECONDS
        backoff = 0.5
        while True:
            try:
                return self._send(method, path, payload, RETRY_SECONDS)
            except ToolError as exc:
                wait = max(exc.retry_after or 0.0, backoff)
                if exc.code not in _RETRYABLE or exc.retry_after is None or time.monotonic() + wait > give_up_at:
                    raise
            time.sleep(wait)
            backoff = min(backoff * 2, _RETRY_BACKOFF_CEILING)

    def post_once(self, path: str, payload: bytes, connect_for: float, answer_for: float) -> None:
        """POST `payload` (JSON) once, for what may be dropped: trying to connect for up to `connect_for` seconds (no
        connection, nothing sent), waiting up to `answer_for` seconds for each read of the answer; a refusal, a 429
        included, is not sent again."""
        self._send("POST", path, payload, connect_for, answer_for)

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        """One model call through the gateway's LLM proxy (OpenAI chat completions), traced."""
        with trace.span("runtime.llm_call") as attributes:
            answer: dict[str, Any] = self.request("POST", LLM_PATH, request)
            if isinstance(answer.get("model"), str):
                attributes["mcpexec.llm.model"] = answer["model"]
            usage = answer.get("usage") or {}
            for key, field in (
                ("mcpexec.llm.tokens_in", "prompt_tokens"),
                ("mcpexec.llm.tokens_out", "completion_tokens"),
            ):
                if isinstance(usage.get(field), int):
                    attributes[key] = usage[field]
            return answer

    def flush_spans(self) -> None:
        """Hand the finished spans to the gateway (runtime/trace.py), briefly: they may be dropped."""
        trace.flush(lambda payload: self.post_once(TRACES_PATH, payload, connect_for=2.0, answer_for=10.0))

    def poll(self, path: str, wait_seconds: int) -> dict[str, Any] | None:
        """One long poll of `path`, one try (long_poll backs off): its answer, or None when the gateway had nothing
        within `wait_seconds` (204)."""
        answer: dict[str, Any] | None = self._send("GET", f"{path}?wait={wait_seconds}", None, 0.0)
        return answer

    def _send(
        self,
        method: str,
        path: str,
        payload: bytes | None,
        retry_for: float,
        answer_for: float = ANSWER_TIMEOUT_SECONDS,
    ) -> Any:
        if self.vault.refuses(path):
            raise ToolError(409, VAULT_LOST, str(self.vault.lost))
        headers = {"Authorization": f"Bearer {self._env.bearer()}", "Content-Type": "application/json"}
        headers.update(self.vault.headers())
        traceparent = trace.header()
        if traceparent is not None:
            headers[TRACEPARENT_HEADER] = traceparent
        answer = self._connections.exchange(method, path, payload, headers, retry_for, answer_for)
        try:
            decoded = None if answer.status == 204 else json.loads(answer.body)
        except ValueError:
            if answer.status < 400:
                raise connection_lost(method, path, "the answer was not JSON") from None
            decoded = None  # an error page from something in between: its text is the message
        self.vault.observe(answer.vault_marks, decoded if answer.status >= 400 else None)
        if self.vault.refuses(path):
            raise ToolError(409, VAULT_LOST, str(self.vault.lost))
        if answer.status >= 400:
            error = decoded.get("error") if isinstance(decoded, dict) else None
            error = error if isinstance(error, dict) else {}
            raise ToolError(
                answer.status,
                error.get("code", "error"),
                error.get("message", answer.body.decode(errors="replace")[:500]),
                _seconds(answer.retry_after),
            )
        return decoded


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
    holds each poll). The gateway away (no connection, the connection lost, 5xx, 429): ask again after a short
    backoff. Refused (401, 403, 410, any other 4xx): ToolError, there is nothing to wait for."""
    gw = gateway()
    backoff = BACKOFF_FIRST_SECONDS
    while True:
        try:
            answer = gw.poll(path, LONG_POLL_WAIT_SECONDS)
        except ToolError as exc:
            if exc.status < 500 and exc.status != 429:
                raise
        else:
            gw.mark_ready()
            if answer is not None:
                return answer
            backoff = BACKOFF_FIRST_SECONDS
            continue
        time.sleep(backoff)
        backoff = min(backoff * 2, BACKOFF_CEILING_SECONDS)


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

    A tool that ran and failed raises ToolError with code "tool_error". A call that needs a person's approval
    returns once they decided: approved, it runs (once); denied, ApprovalDenied; undecided at the task's deadline,
    ApprovalTimeout (both ToolErrors; the call did not run). In a plan's dry run it returns a Planned placeholder (it
    was recorded, not run); in the plan's real run, a call the approved plan does not hold raises ApprovalNotPlanned.
    """
    with trace.span("runtime.tool_call", **{"mcpexec.tool": name}) as attributes:
        try:
            return _call_tool(name, arguments)
        except ToolError as exc:
            attributes["mcpexec.outcome"] = exc.code
            raise


def _call_tool(name: str, arguments: dict[str, Any] | None) -> Any:
    gw = gateway()
    gw.tool_calls += 1
    path = f"/v1/tools/{_quote(name)}/call"
    # The call's own id: a held call is waited for, and sent again once approved, under it (never run twice).
    body: dict[str, Any] = {"arguments": arguments or {}, "callId": uuid.uuid4().hex}
    if gw.plan_id is not None:
        body["planId"] = gw.plan_id
    try:
        answer = gw.request("POST", path, body)
    except ToolError as exc:
        if exc.code == "approval_planned":
            return Planned(name)
        if exc.code == "approval_not_planned":
            raise ApprovalNotPlanned(name, exc.args[0]) from None
        if exc.code not in APPROVAL_ANSWERS or gw.plan_id is not None:
            raise
        answer = _approved(name, path, body)
    if answer.get("isError"):
        raise ToolError(200, "tool_error", _text(answer.get("content") or []))
    if answer.get("structuredContent") is not None:
        return answer["structuredContent"]
    return _text(answer.get("content") or [])


def _approved(name: str, path: str, body: dict[str, Any]) -> Any:
    """A held call (or one refused as decided before): wait for the decision (from any gateway replica, for as long
    as it takes: the gateway ends the wait at the task's deadline), then send it again under the same call id if
    approved."""
    decision = long_poll(f"/v1/approvals/{body['callId']}")
    if decision["state"] == "denied":
        raise ApprovalDenied(name, decision["digest"], decision.get("reason") or "")
    if decision["state"] == "expired":
        raise ApprovalTimeout(name, decision["digest"])
    if decision["state"] != "approved":
        raise ToolError(409, "approval_consumed", f"{name} was taken to run already (digest {decision['digest']})")
    return gateway().request("POST", path, body)


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
        "ApprovalDenied": ApprovalDenied,
        "ApprovalTimeout": ApprovalTimeout,
        "ApprovalNotPlanned": ApprovalNotPlanned,
        "Planned": Planned,
    }
