"""Issue 31.1, the vault lost under a session: the session reads customer C001 (`[EMAIL_1]`); the Redis pod is deleted
and comes back (empty, or from its append-only file); the session reads C002, then sends a message to the address it
read first. It must never reach C002: either the vault came back whole and the message goes to C001, or it did not,
and the code gets 409 `vault_lost`, nothing is sent, and the session ends with that reason."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from tests.e2e.faults.conftest import POOL, Workspace
from tests.e2e.faults.disruptions import force_delete
from tests.e2e.faults.figures import record_figures
from tests.e2e.faults.release_state import pods, sessions_url, wait_ready, wait_release_ready
from tests.e2e.release import RELEASE_NAMESPACE, sent_messages
from tests.e2e.sessions import create_session, wait_session
from tests.support.session_api import execute

pytestmark = pytest.mark.e2e

C001, C002 = "alice.martin@example.com", "bob.okafor@example.net"
READ_FIRST = "a = call_tool('crm/get_customer', {'customer_id': 'C001'})\nprint(a['email'])"
READ_AND_SEND = """
import json
seen = {}
try:
    seen["read"] = call_tool("crm/get_customer", {"customer_id": "C002"})["email"]
except ToolError as exc:
    seen["read"] = f"{exc.code} {exc.status}"
try:
    seen["sent"] = call_tool("crm/send_message", {"to": a["email"], "subject": "vault", "body": "for C001"})["to"]
except ToolError as exc:
    seen["sent"] = f"{exc.code} {exc.status}"
print(json.dumps(seen))
"""


def _execute_once_the_store_is_back(url: str, ns: str, token: str, code: str) -> httpx.Response:
    """The execute API says 503 `session_store_unavailable` when Redis cannot be reached and nothing ran: asking
    again is safe, until it is reachable."""
    deadline = time.monotonic() + 90
    with httpx.Client() as http:
        while True:
            answer = execute(http, url, ns, "vault", token, code)
            if answer.status_code != 503 or time.monotonic() > deadline:
                return answer
            time.sleep(0.5)


def test_a_token_never_reaches_another_customer_after_redis_comes_back(workspace: Workspace) -> None:
    ns, token = workspace.namespace, workspace.token
    wait_release_ready()
    create_session(ns, "vault", POOL)
    wait_session(ns, "vault", "Ready")
    url = sessions_url(pods("gateway")[0])
    with httpx.Client() as http:
        first = execute(http, url, ns, "vault", token, READ_FIRST)
    assert first.status_code == 200 and first.json()["stdout"] == "[EMAIL_1]\n", first.text

    deleted_at = time.monotonic()
    force_delete(RELEASE_NAMESPACE, pods("redis")[0].metadata.name)
    wait_ready("redis", 1)
    answer = _execute_once_the_store_is_back(url, ns, token, READ_AND_SEND)
    recovered = time.monotonic() - deleted_at

    outbox = asyncio.run(sent_messages(f"http://{workspace.crm_ip}:8080/mcp"))
    to = [m["to"] for m in outbox if m["subject"] == "vault"]
    record_figures(
        "vault: Redis pod deleted under a session",
        lost=0, doubled=max(0, len(to) - 1), mixed=to.count(C002), outcome=answer.text[:300],
        recover_seconds=round(recovered, 1),
    )  # fmt: skip
    assert C002 not in to, f"a message meant for C001 went to C002: {outbox}; the session was told {answer.text}"
    if to == [C001]:  # the vault came back whole (its append-only file): the message went where it was meant to
        assert answer.status_code == 200, answer.text
        assert json.loads(answer.json()["stdout"]) == {"read": "[EMAIL_2]", "sent": "[EMAIL_1]"}, answer.json()
        return
    assert to == [], outbox
    # The code was told (or its caller, when the gateway ended the session first) and the session ended with it.
    if answer.status_code == 200:
        seen = json.loads(answer.json()["stdout"])
        assert "vault_lost 409" in seen.values() and seen["sent"] == "vault_lost 409", seen
    else:
        assert answer.status_code == 410 and answer.json()["error"]["code"] == "session_ended", answer.text
        assert "vault_lost" in answer.json()["error"]["message"], answer.text
    ended = wait_session(ns, "vault", "Ended", timeout=60)
    assert ended["reason"].startswith("vault_lost"), ended
