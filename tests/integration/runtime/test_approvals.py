"""A call held for approval, from the sandbox's side: the real runtime (stdlib only) against a gateway whose held
calls are in a real redis-server (a cluster's way) or in its own process (`mcpexec run`'s), its tool the demo
server. Its `call_tool` returns once a person decided: approved, the tool runs once with the real value; denied,
ApprovalDenied (the person's reason); not decided before the task's deadline, ApprovalTimeout. The person's
decision here goes to the gateway's gate in-process (the cluster's approval API over it:
tests/cluster/test_approvals.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.approvals.gate import Subject
from mcpexec.api.approval import PendingApproval
from mcpexec.api.timestamps import now
from tests.integration.runtime.conftest import RuntimeHarness, runtime_harness, start_runtime
from tests.support.components import redis_server

# Reads a customer (its email arrives tokenized), then sends them a message: the send needs approval.
SENDS = """
import json
email = call_tool("demo/get_customer", {"customer_id": "C001"})["email"]
try:
    sent = call_tool("demo/send_message", {"to": email, "subject": "renewal", "body": "hi"})
    print(json.dumps({"sent": sent}))
except ApprovalDenied as exc:
    print(json.dumps({"denied": exc.reason, "code": exc.code, "status": exc.status}))
except ApprovalTimeout as exc:
    print(json.dumps({"timeout": exc.code, "status": exc.status, "is_tool_error": isinstance(exc, ToolError)}))
"""


@pytest.fixture(scope="module", params=["redis", "in-process"])
def harness(request: pytest.FixtureRequest) -> Iterator[RuntimeHarness]:
    if request.param == "in-process":
        with runtime_harness() as shared:
            yield shared
        return
    with redis_server() as url, runtime_harness(redis_url=url) as shared:
        yield shared


def _held(harness: RuntimeHarness, subject: Subject, timeout: float = 30) -> PendingApproval:
    gate = harness.gateway.gateway.core.approvals
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        pending = harness.gateway.run(gate.pending(subject))
        if pending:
            return pending[0]
        time.sleep(0.05)
    raise AssertionError("no call was held")


def _start(harness: RuntimeHarness, name: str, timeout_seconds: int = 60) -> tuple[Subject, object]:
    """The task as the API server has it, created now: its deadline is its creation plus its timeout."""
    task = harness.task(name, code=SENDS, approval={"tools": ["demo/send_*"]}, timeoutSeconds=timeout_seconds)
    task.metadata.creationTimestamp = now()  # type: ignore[attr-defined]
    token = harness.gateway.token(task)
    ctx = harness.gateway.run(harness.gateway.gateway.core.authenticator.authenticate(token))
    url = f"unix://{harness.gateway.socket_path}"
    return Subject.of(ctx), start_runtime(harness.root, task, url, token=token)


def _sent(root: Path) -> list[dict[str, str]]:
    outbox = root / "outbox.jsonl"
    return [json.loads(line) for line in outbox.read_text().splitlines()] if outbox.exists() else []


def test_an_approved_call_runs_once_with_the_real_value(harness: RuntimeHarness) -> None:
    before = len(_sent(harness.root))
    subject, process = _start(harness, "approved")
    held = _held(harness, subject)
    assert held.tool == "demo/send_message"
    # The person sees the task's token for the address, never the address.
    assert "[EMAIL_1]" in held.arguments and "@" not in held.arguments
    gate = harness.gateway.gateway.core.approvals
    decided = harness.gateway.run(gate.decide(subject, held.digest, True, "alice", ""))
    assert (decided.state, decided.approver) == ("approved", "alice")
    run = process.wait()  # type: ignore[attr-defined]
    assert run.exit_code == 0, run.stderr
    assert "sent" in json.loads(run.result["result"])
    sent = _sent(harness.root)[before:]
    assert len(sent) == 1 and "@" in sent[0]["to"]  # the tool got the real value, once
    assert harness.gateway.run(gate.pending(subject)) == []


def test_a_denied_call_raises_approval_denied_and_never_runs(harness: RuntimeHarness) -> None:
    before = len(_sent(harness.root))
    subject, process = _start(harness, "denied")
    held = _held(harness, subject)
    gate = harness.gateway.gateway.core.approvals
    harness.gateway.run(gate.decide(subject, held.digest, False, "bob", "not this quarter"))
    run = process.wait()  # type: ignore[attr-defined]
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.result["result"]) == {"denied": "not this quarter", "code": "approval_denied", "status": 403}
    assert _sent(harness.root)[before:] == []


def test_a_call_not_decided_by_the_deadline_raises_approval_timeout(harness: RuntimeHarness) -> None:
    before = len(_sent(harness.root))
    _subject, process = _start(harness, "undecided", timeout_seconds=3)
    run = process.wait()  # type: ignore[attr-defined]
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.result["result"]) == {"timeout": "approval_timeout", "status": 408, "is_tool_error": True}
    assert _sent(harness.root)[before:] == []
