"""Approval of held calls on this machine, for real: the `mcpexec` CLI under gVisor, its in-process gateway holding
the calls (no Redis), the demo server whose owner asks for approval of `send_*` (its servers file's
`approval.tools`), its outbox on the host showing what a tool really received.

- `mcpexec serve`: the MCP SDK's client answers the elicitation (accept: the call runs once, with the real address;
  decline: the code gets ApprovalDenied), in the handshake era (a server request) and in the 2026-07-28 era (an
  InputRequiredResult, answered in the client's next round, which cannot be replayed to decide a later hold); a client
  without elicitation gets an error saying how to approve; `--approve` approves without asking.
- `mcpexec run`: a prompt on a real terminal (a pty) showing the tool and its tokenized arguments, answered y or n; a
  plan's calls listed at once; with no terminal the call is refused, saying how to approve, unless `--approve TOOLGLOB`
  or `--approve-all` is given.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import yaml
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import LATEST_MODERN_VERSION

from tests.sandbox.local.test_serve import serve_command
from tests.support.approval_code import RAW_EMAIL, campaign, sends
from tests.support.components import REPO
from tests.support.malformed import agenttask

SENDS, PLAN = sends("demo"), campaign("demo")


def _servers(tmp_path: Path) -> tuple[Path, Path]:
    """A servers file whose demo server asks for approval of its `send_*` tools; and the demo's outbox."""
    outbox, servers = tmp_path / "outbox.jsonl", tmp_path / "servers.yaml"
    demo = {
        "transport": "stdio",
        "command": [sys.executable, "-m", "mcpexec.demo_server"],
        "env": {"DEMO_OUTBOX": str(outbox)},
        "approval": {"tools": ["send_*"]},
    }
    servers.write_text(yaml.safe_dump({"servers": {"demo": demo}}))
    return servers, outbox


def _sent(outbox: Path) -> list[str]:
    return [json.loads(line)["to"] for line in outbox.read_text().splitlines()] if outbox.exists() else []


def _params(servers: Path, state_home: Path, *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=serve_command("--servers", str(servers), *options)[1:],
        env={"PATH": os.environ["PATH"], "MCPEXEC_HOME": str(state_home)},
        cwd=str(REPO),
    )


@pytest.mark.parametrize("mode", ["legacy", LATEST_MODERN_VERSION])
def test_mcpexec_serve_asks_the_clients_user_through_elicitation(mode: str, tmp_path: Path, state_home: Path) -> None:
    """The handshake era asks with an elicitation request; the 2026-07-28 era (no server requests) with an
    InputRequiredResult that the SDK's client answers through the same callback and sends back in its next round."""
    servers, outbox = _servers(tmp_path)
    asked: list[types.ElicitRequestParams] = []
    answers = iter(["accept", "decline"])

    async def answer(_context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        action = next(answers)
        return types.ElicitResult(action=action, content={"note": "ok by me"} if action == "accept" else None)

    async def session() -> tuple[str, str]:
        async with Client(_params(servers, state_home), elicitation_callback=answer, mode=mode) as client:
            assert (client.protocol_version == LATEST_MODERN_VERSION) == (mode != "legacy")
            approved = await client.call_tool("execute_code", {"code": SENDS, "timeoutSeconds": 60})
            declined = await client.call_tool("execute_code", {"code": SENDS, "timeoutSeconds": 60})
            assert approved.structured_content is not None and declined.structured_content is not None
            return approved.structured_content["stdout"], declined.structured_content["stdout"]

    approved, declined = asyncio.run(session())
    assert approved == "sent sent\n"
    # The same exact call made again needs a new approval (one approval, one run): asked again, declined, denied.
    assert declined == "denied: declined in the MCP client\n"
    assert _sent(outbox) == [RAW_EMAIL]  # the tool got the real address, once
    assert len(asked) == 2 and asked[0].message == asked[1].message
    question = asked[0]
    assert isinstance(question, types.ElicitRequestFormParams)
    assert question.message.startswith("The code wants to call demo/send_message with these arguments")
    assert '"to": "[EMAIL_1]"' in question.message and RAW_EMAIL not in question.message


def test_a_2026_answer_decides_only_the_hold_it_was_asked_about(tmp_path: Path, state_home: Path) -> None:
    """The rounds driven by hand: an accepted answer sent again with its state, once the same exact call is held
    anew (same digest) by a second execution, decides nothing: it gets the first execution's outcome back; the
    second hold is still asked about, and its own answer decides it."""
    servers, outbox = _servers(tmp_path)
    arguments = {"code": SENDS, "timeoutSeconds": 60}
    accept: types.InputResponses = {"approval": types.ElicitResult(action="accept", content={"note": ""})}
    decline: types.InputResponses = {"approval": types.ElicitResult(action="decline")}

    async def unused(_context: ClientRequestContext, _params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("the rounds are driven by hand")  # the callback only declares elicitation

    async def rounds() -> list[types.CallToolResult | types.InputRequiredResult]:
        params = _params(servers, state_home)
        async with Client(params, elicitation_callback=unused, mode=LATEST_MODERN_VERSION) as client:

            async def call(
                answer: types.InputResponses | None = None, state: str | None = None
            ) -> types.CallToolResult | types.InputRequiredResult:
                return await client.session.call_tool(
                    "execute_code", arguments, input_responses=answer, request_state=state, allow_input_required=True
                )

            first = await call()
            assert isinstance(first, types.InputRequiredResult), first
            approved = await call(accept, first.request_state)
            second = await call()
            assert isinstance(second, types.InputRequiredResult), second
            replayed = await call(accept, first.request_state)  # the first answer again, while the second hold waits
            declined = await call(decline, second.request_state)
            return [first, approved, second, replayed, declined]

    first, approved, second, replayed, declined = asyncio.run(rounds())
    assert isinstance(first, types.InputRequiredResult) and isinstance(second, types.InputRequiredResult)
    assert first.input_requests is not None and second.input_requests is not None
    assert first.input_requests.keys() == {"approval"} and first.request_state != second.request_state
    outcomes = []
    for result in (approved, replayed, declined):
        assert isinstance(result, types.CallToolResult) and not result.is_error, result
        assert result.structured_content is not None
        outcomes.append((result.structured_content["executionId"], result.structured_content["stdout"]))
    assert outcomes[0] == outcomes[1] and outcomes[0][1] == "sent sent\n"  # the replay: the first run's outcome
    assert outcomes[2][0] != outcomes[0][0] and outcomes[2][1] == "denied: declined in the MCP client\n"
    assert _sent(outbox) == [RAW_EMAIL]  # one approval, one run


def test_a_2026_client_approves_a_plan_with_one_answer(tmp_path: Path, state_home: Path) -> None:
    """`approval: plan` through a 2026-07-28 client: one question listing the dry run's calls (tokenized), accepted
    once; the real run sends each of them once, with the real addresses."""
    servers, outbox = _servers(tmp_path)
    asked: list[str] = []

    async def answer(_context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"note": "the team plan, once"})

    async def session() -> str:
        async with Client(_params(servers, state_home), elicitation_callback=answer, mode=LATEST_MODERN_VERSION) as mcp:
            arguments = {"code": PLAN, "timeoutSeconds": 120, "approval": "plan"}
            result = await mcp.call_tool("execute_code", arguments)
            assert result.structured_content is not None, result.content
            return str(result.structured_content["stdout"])

    assert asyncio.run(session()).splitlines() == ["C002 sent", "C003 sent"]
    (question,) = asked
    assert question.startswith("The code's dry run would make these calls, which need your approval:")
    assert question.count("- demo/send_message {") == 2 and "[EMAIL_1]" in question and "@" not in question
    assert sorted(_sent(outbox)) == ["bob.okafor@example.net", "chloe.dubois@example.fr"]


def test_mcpexec_serve_tells_a_client_without_elicitation_how_to_approve(tmp_path: Path, state_home: Path) -> None:
    servers, outbox = _servers(tmp_path)

    async def session(params: StdioServerParameters, mode: str = "legacy") -> tuple[bool, str]:
        async with Client(params, mode=mode) as client:
            answer = await client.call_tool("execute_code", {"code": SENDS, "timeoutSeconds": 60})
            text = answer.content[0].text if isinstance(answer.content[0], types.TextContent) else ""
            return answer.is_error, text

    is_error, text = asyncio.run(session(_params(servers, state_home)))
    assert is_error and "approval_required (execution " in text
    assert "demo/send_message is held" in text and "this MCP client cannot ask you (no elicitation" in text
    assert "--approve" in text and "executionId" in text
    assert _sent(outbox) == []
    # A 2026-07-28 client that declared no elicitation cannot be asked either.
    is_error, text = asyncio.run(session(_params(servers, state_home), LATEST_MODERN_VERSION))
    assert is_error and "this MCP client cannot ask you (no elicitation" in text, text
    assert _sent(outbox) == []
    # Approved by a rule given at start: nobody is asked.
    is_error, text = asyncio.run(session(_params(servers, state_home, "--approve", "demo/send_*")))
    assert not is_error and json.loads(text)["stdout"] == "sent sent\n", text
    assert _sent(outbox) == [RAW_EMAIL]


def _task(tmp_path: Path, code: str, **spec: Any) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(agenttask("approvals", code=code, mcpServers=["demo"], timeoutSeconds=60, **spec)))
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpexec.local.cli", *args]


def _on_a_terminal(argv: list[str], answers: list[str], timeout: float = 120) -> tuple[str, str, int]:
    """Run `argv` with a pty as its stdin and stderr (its terminal), answering each `[y/N]` prompt in turn; what the
    terminal showed, the stdout, the exit code."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        argv, stdin=terminal, stderr=terminal, stdout=subprocess.PIPE, cwd=REPO, text=True, env=dict(os.environ)
    )
    os.close(terminal)
    shown, pending = "", list(answers)
    give_up = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < give_up:
        ready, _, _ = select.select([controller], [], [], 0.1)
        if ready:
            try:
                shown += os.read(controller, 4096).decode(errors="replace")
            except OSError:  # the child closed the terminal
                break
        if pending and shown.count("[y/N]") > len(answers) - len(pending):
            os.write(controller, f"{pending.pop(0)}\n".encode())
    stdout, _ = process.communicate(timeout=60)
    os.close(controller)
    return shown, stdout, process.returncode


def test_mcpexec_run_asks_at_the_terminal(tmp_path: Path) -> None:
    servers, outbox = _servers(tmp_path)
    task = _task(tmp_path, SENDS)
    shown, stdout, code = _on_a_terminal(_cli("run", str(task), "--servers", str(servers)), ["y"])
    assert code == 0, shown
    assert "the task's code wants to call demo/send_message with (personal data as tokens):" in shown
    assert '"to": "[EMAIL_1]"' in shown and RAW_EMAIL not in shown and "[y/N]" in shown
    assert stdout.splitlines()[0] == "sent sent"
    assert _sent(outbox) == [RAW_EMAIL]

    shown, stdout, code = _on_a_terminal(_cli("run", str(task), "--servers", str(servers)), ["n"])
    assert code == 0, shown
    assert stdout.splitlines()[0] == "denied: denied at the terminal"
    assert _sent(outbox) == [RAW_EMAIL]  # nothing more sent


def test_a_plan_is_approved_at_once_at_the_terminal(tmp_path: Path) -> None:
    servers, outbox = _servers(tmp_path)
    task = _task(tmp_path, PLAN, approval={"mode": "plan"})
    shown, stdout, code = _on_a_terminal(_cli("run", str(task), "--servers", str(servers)), ["y"])
    assert code == 0, shown
    assert "the task's dry run would make these calls (personal data as tokens):" in shown
    assert shown.count("demo/send_message {") == 2 and "Approve this plan" in shown and "@" not in shown
    assert shown.count("[y/N]") == 1  # two calls, one question
    assert stdout.splitlines()[:2] == ["C002 sent", "C003 sent"]
    assert sorted(_sent(outbox)) == ["bob.okafor@example.net", "chloe.dubois@example.fr"]


def test_mcpexec_run_without_a_terminal_refuses_unless_told_to_approve(tmp_path: Path) -> None:
    servers, outbox = _servers(tmp_path)
    task = _task(tmp_path, SENDS)

    def run(*options: str) -> str:
        done = subprocess.run(
            _cli("run", str(task), "--servers", str(servers), *options),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[0]

    refused = run()
    assert refused == "denied: no terminal to ask for approval: run with --approve 'demo/send_message' or --approve-all"
    assert _sent(outbox) == []
    assert run("--approve", "demo/get_*", "--approve", "demo/send_*") == "sent sent"
    assert run("--approve-all") == "sent sent"
    assert _sent(outbox) == [RAW_EMAIL, RAW_EMAIL]
