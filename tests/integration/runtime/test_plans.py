"""Plan approval (`approval: plan`) on a realistic workflow: "email every customer on the team plan". The customers
live in the reference server-memory's knowledge graph (npm, reads only: `search_nodes`), the emails go out through
the demo server's `send_message` (which needs approval). The real runtime (stdlib only) runs the task's code twice
against a gateway whose held calls are in a real redis-server or in its own process: a dry run (the search runs, each
send is recorded and returns a Planned placeholder, nothing is sent), then, once a person approved the recorded set
at once, the real run, whose sends must each match an approved digest. A customer added between the dry run and the
real run (the reads changed) is refused: its send's digest was never approved. Denied, nothing is sent at all."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.approvals.gate import Subject
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.timestamps import now
from tests.integration.runtime.conftest import RuntimeHarness, RuntimeProcess, runtime_harness, start_runtime
from tests.integration.runtime.test_approvals import _held
from tests.support.components import NPM_BIN, redis_server

CAMPAIGN = """
import json
found = call_tool("memory/search_nodes", {"query": "plan: team"})["entities"]
sent, planned, refused = [], [], []
for customer in sorted(found, key=lambda c: c["name"]):
    email = next(o.split(": ", 1)[1] for o in customer["observations"] if o.startswith("email: "))
    try:
        receipt = call_tool("demo/send_message", {"to": email, "subject": "Team plan", "body": "Your renewal"})
    except ApprovalNotPlanned:
        refused.append(customer["name"])
        continue
    (planned if isinstance(receipt, Planned) else sent).append(customer["name"])
print(json.dumps({"sent": sent, "planned": planned, "refused": refused}))
"""


def _customer(name: str, plan: str, email: str) -> str:
    observations = [f"plan: {plan}", f"email: {email}"]
    return json.dumps({"type": "entity", "name": name, "entityType": "customer", "observations": observations})


@pytest.fixture(scope="module")
def crm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The customers: server-memory's knowledge graph file, read again on every call."""
    return tmp_path_factory.mktemp("crm") / "memory.jsonl"


@pytest.fixture(scope="module", params=["redis", "in-process"])
def harness(request: pytest.FixtureRequest, crm: Path) -> Iterator[RuntimeHarness]:
    memory = MCPServerSpec(
        transport="stdio", command=[str(NPM_BIN / "mcp-server-memory")], env={"MEMORY_FILE_PATH": str(crm)}
    )
    if request.param == "in-process":
        with runtime_harness(extra_servers={"memory": memory}) as shared:
            yield shared
        return
    with redis_server() as url, runtime_harness(redis_url=url, extra_servers={"memory": memory}) as shared:
        yield shared


def _sent(root: Path) -> list[dict[str, str]]:
    outbox = root / "outbox.jsonl"
    return [json.loads(line) for line in outbox.read_text().splitlines()] if outbox.exists() else []


def _start(harness: RuntimeHarness, name: str) -> tuple[Subject, RuntimeProcess]:
    spec = {"mcpServers": ["memory", "demo"], "approval": {"tools": ["demo/send_*"], "mode": "plan"}}
    task = harness.task(name, code=CAMPAIGN, timeoutSeconds=60, **spec)
    task.metadata.creationTimestamp = now()  # type: ignore[attr-defined]
    token = harness.gateway.token(task)
    ctx = harness.gateway.run(harness.gateway.gateway.core.authenticator.authenticate(token))
    url = f"unix://{harness.gateway.socket_path}"
    return Subject.of(ctx), start_runtime(harness.root, task, url, token=token)


def test_a_plan_is_approved_at_once_and_its_real_run_makes_only_the_approved_calls(
    harness: RuntimeHarness, crm: Path
) -> None:
    crm.write_text(
        "\n".join(
            [
                _customer("Alice Martin", "team", "alice.martin@example.com"),
                _customer("Bob Okafor", "team", "bob.okafor@example.net"),
                _customer("Daan de Vries", "starter", "daan@example.nl"),
            ]
        )
        + "\n"
    )
    before = len(_sent(harness.root))
    subject, process = _start(harness, "campaign")
    plan = _held(harness, subject)
    # One held "call": the plan, its digest binding both sends; the person sees tokens, never an address.
    assert plan.tool == "plan" and plan.calls is not None
    assert [(c.tool, c.count) for c in plan.calls] == [("demo/send_message", 1), ("demo/send_message", 1)]
    assert all("[EMAIL_" in c.arguments and "@" not in c.arguments for c in plan.calls)
    assert plan.arguments.startswith("2 call(s):\ndemo/send_message {")
    assert _sent(harness.root)[before:] == []  # the dry run sent nothing

    # The reads change before the real run: a new customer on the team plan.
    with crm.open("a") as graph:
        graph.write(_customer("Chloé Dubois", "team", "chloe.dubois@example.fr") + "\n")
    gate = harness.gateway.gateway.core.approvals
    decided = harness.gateway.run(gate.decide(subject, plan.digest, True, "carol", ""))
    assert decided.state == "approved"

    run = process.wait()
    assert run.exit_code == 0, run.stderr
    # The approved two ran, once each, with the real addresses; the new customer's send was never approved.
    outcome = json.loads(run.result["result"])
    assert outcome == {"sent": ["Alice Martin", "Bob Okafor"], "planned": [], "refused": ["Chloé Dubois"]}
    assert sorted(m["to"] for m in _sent(harness.root)[before:]) == [
        "alice.martin@example.com",
        "bob.okafor@example.net",
    ]
    assert harness.gateway.run(gate.pending(subject)) == []


def test_a_denied_plan_sends_nothing(harness: RuntimeHarness, crm: Path) -> None:
    crm.write_text(_customer("Alice Martin", "team", "alice.martin@example.com") + "\n")
    before = len(_sent(harness.root))
    subject, process = _start(harness, "denied-campaign")
    plan = _held(harness, subject)
    gate = harness.gateway.gateway.core.approvals
    harness.gateway.run(gate.decide(subject, plan.digest, False, "carol", "not before the board meets"))
    run = process.wait()
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert "approval_denied" in run.result["error"] and "not before the board meets" in run.result["error"]
    assert _sent(harness.root)[before:] == []


def test_a_dry_run_that_needs_no_approval_is_the_run(harness: RuntimeHarness, crm: Path) -> None:
    """No customer on the plan: the dry run recorded nothing, so there is nothing to approve and no second run."""
    crm.write_text(_customer("Daan de Vries", "starter", "daan@example.nl") + "\n")
    _subject, process = _start(harness, "empty-campaign")
    run = process.wait()
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.result["result"]) == {"sent": [], "planned": [], "refused": []}
    assert run.log.count('"sent"') == 1  # printed once: the code ran once
