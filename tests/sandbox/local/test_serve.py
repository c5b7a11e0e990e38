"""`mcpexec serve` under gVisor, driven by MCP clients nobody here wrote, over stdio and over streamable HTTP: the MCP
Python SDK's client (the `mcp` package) and the MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`, run from
tests/mcp-servers, offline). Behind them: the in-process gateway, the demo MCP server, one runsc sandbox per session.
The refusal of stateless requests is tested on both HTTP front doors at once: tests/cluster/test_gateway_sessions.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcpexec.local.mounts import mounted_under
from tests.sandbox.local.conftest import orphaned_sandboxes, until
from tests.support.components import NPM_BIN, REPO, free_port, wait_for_port

RAW_EMAIL = "alice.martin@example.com"


def serve_command(*options: str) -> list[str]:
    return [sys.executable, "-m", "mcpexec.local.cli", "serve", *options]


async def execute(client: Client, code: str) -> dict[str, Any]:
    answer = await client.call_tool("execute_code", {"code": code})
    assert not answer.is_error, answer.content
    assert answer.structured_content is not None
    return answer.structured_content


async def a_session_of_work(client: Client) -> None:
    """Discovery, a tool call, PII tokens, variables kept between calls."""
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == {"execute_code", "search_tools"}
    execute_tool = next(tool for tool in listed.tools if tool.name == "execute_code")
    assert "call_tool" in (execute_tool.description or "") and "servers.<server>" in (execute_tool.description or "")
    found = await execute(client, "print(search_tools('customer'))")
    assert "demo/get_customer" in found["stdout"]
    searched = await client.call_tool("search_tools", {"query": "customer", "detail": "name"})
    assert searched.structured_content is not None and "demo/get_customer" in searched.structured_content["tools"]
    called = await execute(client, "c = call_tool('demo/get_customer', {'customer_id': 'C001'})\nprint(c['email'])")
    assert called["stdout"].startswith("[EMAIL_") and RAW_EMAIL not in str(called)
    kept = await execute(client, "print(c['email'] == " + repr(called["stdout"].strip()) + ", c['id'])")
    assert kept == {
        "stdout": "True C001\n",
        "stderr": "",
        "error": None,
        "durationMs": kept["durationMs"],
        "executionId": kept["executionId"],
    }
    # A client that asks for progress gets the output as it is printed, in progress notifications.
    messages: list[str] = []

    async def on_progress(_progress: float, _total: float | None, message: str | None) -> None:
        messages.append(message or "")

    code = (
        "import sys\nticks = globals().get('ticks', 0) + 1\n"
        "for i in range(3):\n    print('tick', i)\nprint('done', file=sys.stderr)"
    )
    streamed = await client.call_tool("execute_code", {"code": code}, progress_callback=on_progress)
    assert not streamed.is_error and streamed.structured_content is not None, streamed.content
    # The first message names the execution (issue 31.3), then what the code printed.
    execution_id = streamed.structured_content["executionId"]
    assert messages[0] == f"execution {execution_id}" and "".join(messages[1:]) == "tick 0\ntick 1\ntick 2\ndone\n"
    assert streamed.structured_content["stdout"] == "tick 0\ntick 1\ntick 2\n"
    # The same code sent again with its executionId is that execution's outcome: it does not run again.
    again = await client.call_tool("execute_code", {"code": code, "executionId": execution_id})
    assert again.structured_content == streamed.structured_content
    assert (await execute(client, "print(ticks)"))["stdout"] == "1\n"
    other = await client.call_tool("execute_code", {"code": "print(2)", "executionId": execution_id})
    assert other.is_error and "execution_id_in_use" in str(other.content)


def test_stdio_session_and_nothing_left_after_the_client_leaves(state_home: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_command()[1:],
        env={"PATH": os.environ["PATH"], "MCPEXEC_HOME": str(state_home)},
        cwd=str(REPO),
    )

    async def session() -> None:
        async with Client(params) as client:
            await a_session_of_work(client)
            assert next(p.name for p in (state_home / "runs").iterdir()).startswith("session-")
            assert mounted_under(state_home), "the session's workspace is mounted while it runs"

    asyncio.run(session())
    assert until(lambda: not mounted_under(state_home), 30), "the session's sandbox outlived the MCP client"
    assert orphaned_sandboxes() == []


@contextmanager
def http_server(state_home: Path, *options: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "MCPEXEC_HOME": str(state_home)}
    proc = subprocess.Popen(serve_command("--http", str(port), *options), env=env, cwd=REPO)
    try:
        wait_for_port(port, proc, "mcpexec serve", timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0
    assert until(lambda: not mounted_under(state_home), 30), "a sandbox outlived the server"
    assert orphaned_sandboxes() == []


def test_http_sessions_each_get_a_warm_sandbox_of_their_own_ended_with_the_session(state_home: Path) -> None:
    with http_server(state_home, "--warm", "1") as url:
        warm_mounts = until(lambda: len(mounted_under(state_home)) == 2, 30)  # its workspace and skills images
        assert warm_mounts, mounted_under(state_home)

        async def sessions() -> None:
            # `auto` probes the stateless 2026 era first; the server refuses it, the client falls back to a session.
            async with Client(url) as first:
                assert first.protocol_version != "2026-07-28"
                await a_session_of_work(first)
                async with Client(url, mode="legacy") as second:
                    assert (await execute(second, "print('c' in globals())"))["stdout"] == "False\n"
                    # Two sessions, and the sandbox started to replace the warm one the first claimed.
                    assert until(lambda: len(mounted_under(state_home)) == 6, 30), mounted_under(state_home)

        asyncio.run(sessions())
        # Both sessions deleted by their clients: their sandboxes are gone, the warm one stays.
        assert until(lambda: len(mounted_under(state_home)) == 2, 30), mounted_under(state_home)


def inspector(*target: str, method: str, state_home: Path, **tool_args: str) -> dict[str, Any]:
    """One MCP Inspector CLI run (one MCP session): `target` is a server command, or a URL and `--transport http`."""
    argv = [str(NPM_BIN / "mcp-inspector"), "--cli", *target, "--method", method]
    if tool_args:
        argv += ["--tool-name", "execute_code", *(a for k, v in tool_args.items() for a in ("--tool-arg", f"{k}={v}"))]
    done = subprocess.run(
        argv, env={**os.environ, "MCPEXEC_HOME": str(state_home)}, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


SNIPPET = (
    "print(search_tools('customer')); from servers.demo import get_customer; c = get_customer(customer_id='C001'); "
    "print(c['email'])"
)


def test_the_mcp_inspector_cli_over_stdio_and_http(state_home: Path) -> None:
    listed = inspector(*serve_command(), method="tools/list", state_home=state_home)
    assert {tool["name"] for tool in listed["tools"]} == {"execute_code", "search_tools"}
    called = inspector(*serve_command(), method="tools/call", state_home=state_home, code=SNIPPET)
    assert not called["isError"]
    stdout = called["structuredContent"]["stdout"]
    assert "demo/get_customer" in stdout and "[EMAIL_" in stdout and RAW_EMAIL not in json.dumps(called)
    with http_server(state_home) as url:
        over_http = inspector(url, "--transport", "http", method="tools/call", state_home=state_home, code=SNIPPET)
        assert over_http["structuredContent"]["stdout"] == stdout
    assert until(lambda: not mounted_under(state_home), 30)
