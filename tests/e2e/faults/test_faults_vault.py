"""Issue 31.1, the vault under a session: the session reads customer C001 (`[EMAIL_1]`); Redis goes away and comes
back; the session reads C002, then sends a message to the address it read first. It must never reach C002.

- The Redis pod deleted at once (a drain with no grace): it comes back from its append-only file (the chart keeps it
  on a volume), the vault whole, and the message goes to C001.
- Then Redis moved to a node without its disk: it comes back empty. The code gets 409 `vault_lost`, nothing is sent,
  and the session ends with that reason; so does a task that read C001 before and does the same after.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client

from tests.e2e.faults.calls import execute_until_queued, ready_session
from tests.e2e.faults.conftest import POOL, Workspace
from tests.e2e.faults.disruptions import force_delete, lose_redis_disk
from tests.e2e.faults.figures import record_figures
from tests.e2e.faults.release_state import pods, sessions_url, wait_ready, wait_release_ready
from tests.e2e.node import Node
from tests.e2e.release import API_VERSION, GROUP, PLURAL, RELEASE_NAMESPACE, sent_messages, wait_task
from tests.e2e.sessions import wait_session

pytestmark = pytest.mark.e2e

C001, C002 = "alice.martin@example.com", "bob.okafor@example.net"
# A read through a vault that cannot be reached yet (503 `pii_vault_unavailable`: nothing minted; a replica's
# connection finds out on first use that Redis restarted) is asked again, as an agent would.
READ = """
import json, time
retries = 0
def read(customer):
    global retries
    while True:
        try:
            return call_tool("crm/get_customer", {"customer_id": customer})
        except ToolError as exc:
            if exc.code != "pii_vault_unavailable" or retries >= 60:
                raise
            retries += 1
            time.sleep(0.5)
"""
READ_FIRST = READ + "a = read('C001')\nprint(a['email'])\n"
READ_AND_SEND = """
seen = {}
try:
    seen["read"] = read("C002")["email"]
except ToolError as exc:
    seen["read"] = f"{exc.code} {exc.status}"
try:
    seen["sent"] = call_tool("crm/send_message", {"to": a["email"], "subject": "SUBJECT", "body": "for C001"})["to"]
except ToolError as exc:
    seen["sent"] = f"{exc.code} {exc.status}"
seen["retries"] = retries
print(json.dumps(seen))
"""
# A cold task that reads C001, sleeps through both faults (the test checks it did), then does what the session does.
TASK_CODE = (
    READ
    + "a = read('C001')\n"
    + "call_tool('rec/record', {'label': 'vault-task-read'})\n"
    + "time.sleep(30)\n"
    + "try:\n    call_tool('rec/record', {'label': 'vault-task-woke'})\nexcept ToolError:\n    pass\n"
    + READ_AND_SEND.replace("SUBJECT", "task")
)


def _after(fault: Callable[[], None], url: str, ns: str, token: str, subject: str) -> tuple[httpx.Response, float]:
    """Do the fault, then have the session read C002 and send to C001's token: the answer, and the seconds from the
    fault until the session answered."""
    started = time.monotonic()
    fault()
    wait_ready("redis", 1)
    answer = execute_until_queued(url, ns, "vault", token, READ_AND_SEND.replace("SUBJECT", subject))
    return answer, time.monotonic() - started


def _wait_read(custom: client.CustomObjectsApi, ns: str, workspace: Workspace) -> None:
    """Until the task has read C001 (it must not have ended before)."""
    deadline = time.monotonic() + 120
    while "vault-task-read" not in workspace.recorder.labels():
        task: Any = custom.get_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, "vault")
        status = task.get("status") or {}
        assert status.get("phase") not in ("Succeeded", "Failed", "TimedOut"), f"the task ended first: {status}"
        assert time.monotonic() < deadline, f"the task did not read C001: {status}"
        time.sleep(0.5)


def _sent(workspace: Workspace, subject: str) -> list[str]:
    outbox: list[dict[str, Any]] = asyncio.run(sent_messages(f"http://{workspace.crm_ip}:8080/mcp"))
    return [m["to"] for m in outbox if m["subject"] == subject]


def test_a_token_never_reaches_another_customer_when_redis_comes_back(e2e_node: Node, workspace: Workspace) -> None:
    ns, token, custom = workspace.namespace, workspace.token, client.CustomObjectsApi()
    wait_release_ready()
    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": "vault"},
        "spec": {"timeoutSeconds": 300, "mcpServers": ["crm", "rec"], "code": TASK_CODE},
    }  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, task)
    with ready_session(ns, "vault", POOL):
        url = sessions_url(pods("gateway")[0])
        first = execute_until_queued(url, ns, "vault", token, READ_FIRST)
        assert first.status_code == 200 and first.json()["stdout"] == "[EMAIL_1]\n", first.text

        # The pod deleted: back from its append-only file.
        kept, kept_seconds = _after(
            lambda: force_delete(RELEASE_NAMESPACE, pods("redis")[0].metadata.name), url, ns, token, "kept"
        )
        kept_to = _sent(workspace, "kept")
        kept_seen = json.loads(kept.json()["stdout"]) if kept.status_code == 200 else {}
        # Its disk lost: back empty (the task read C001 before, and wakes after).
        _wait_read(custom, ns, workspace)
        lost, lost_seconds = _after(lambda: lose_redis_disk(e2e_node), url, ns, token, "lost")
        assert workspace.recorder.count("vault-task-woke") == 0, (
            "the task woke before Redis lost its disk: sleep longer"
        )
        lost_to = _sent(workspace, "lost")
        task_status = wait_task(custom, "vault", ns, timeout=180)["status"]
        task_to = _sent(workspace, "task")
        record_figures(
            "vault: Redis deleted under a session (kept: from its AOF; lost: its disk gone)",
            lost=int(C001 not in kept_to), doubled=max(0, len(kept_to) - 1) + max(0, len(lost_to) - 1),
            mixed=kept_to.count(C002) + lost_to.count(C002) + task_to.count(C002),
            recover_seconds={"kept": round(kept_seconds, 1), "lost": round(lost_seconds, 1)},
            vault_retries=kept_seen.get("retries"), task=task_status.get("phase"),
            answers={"kept": kept.text[:200], "lost": lost.text[:200]},
        )  # fmt: skip

        assert C002 not in kept_to + lost_to + task_to, (
            f"a message meant for C001 went to C002: {kept_to} {lost_to} {task_to}"
        )
        assert kept.status_code == 200, kept.text
        # C002's address a token of its own (C001's record holds a second address: [EMAIL_2]); C001's still C001's.
        assert kept_seen["read"].startswith("[EMAIL_") and kept_seen["read"] != "[EMAIL_1]", kept_seen
        assert kept_seen["sent"] == "[EMAIL_1]" and kept_to == [C001], (kept_seen, kept_to)

        assert lost_to == [], "nothing is sent once the vault is lost"
        # The code is told (or its caller, when the gateway ended the session first); the session ends with the reason.
        if lost.status_code == 200:
            seen = json.loads(lost.json()["stdout"])
            assert seen["read"] == "vault_lost 409" and seen["sent"] == "vault_lost 409", seen
        else:
            assert lost.status_code == 410 and lost.json()["error"]["code"] == "session_ended", lost.text
            assert "vault_lost" in lost.json()["error"]["message"], lost.text
        assert task_to == [] and task_status["phase"] == "Failed", task_status
        assert "vault_lost" in json.dumps(task_status), (
            f"the task ended without saying its vault was lost: {task_status}"
        )
        ended = wait_session(ns, "vault", "Ended", timeout=60)
        assert "vault_lost" in json.dumps(ended), f"the session ended without saying its vault was lost: {ended}"
