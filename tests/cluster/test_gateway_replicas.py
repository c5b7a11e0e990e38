"""Two gateway replicas against a real API server, sharing AgentSessions' executions through a real redis-server:
the session's runtime polls one replica while its person calls the execute API of the other; the execute API
streams; hostile input is answered clearly and leaves the session working. No operator runs in this module: the
session's Ready status is written by the test, as the operator would write it (tests/cluster/test_sessions.py has
the operator's side)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.cluster.test_gateway_pools import POOL_ACCOUNT, _pod_token, _pool_account, _pool_pod, pool_runtime
from tests.cluster.test_gateway_sessions import SessionsGateway, _execute, _ready_session, _session_user_role, _user
from tests.support.components import free_port, redis_server
from tests.support.control_plane import ControlPlane
from tests.support.session_api import stream

# Prints, then waits for the caller to have read that line (it creates /workspace/go): without streaming the line
# would only come with the outcome, and the snippet would run into its limit.
WAITS_FOR_ITS_READER = """import os, time
print('first', flush=True)
while not os.path.exists('go'):
    time.sleep(0.05)
print('second')"""


@pytest.mark.timeout(300)
def test_two_gateway_replicas_share_a_session_and_hostile_input_leaves_it_working(
    cluster: ControlPlane, namespace: str
) -> None:
    """The runtime polls one replica, callers reach either (Redis, real, between them); the execute API streams;
    oversized code, a body that is not UTF-8, a snippet that never ends and an output flood are answered clearly."""
    role = _session_user_role()
    alice = _user(namespace, "alice", role)
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-rrrrr")
    polled_port = free_port()
    _ready_session(namespace, "shared", pod)
    with (
        redis_server() as redis_url,
        SessionsGateway(cluster, polled_port, redis_url) as polled,
        SessionsGateway(cluster, None, redis_url) as other,
        pool_runtime(_pod_token(namespace, pod), polled_port) as (_runtime, workspace),
    ):
        first = _execute(other.people_url, namespace, "shared", alice, "x = 40\nprint('via the other replica')")
        assert first.status_code == 200, first.text
        assert first.json()["stdout"] == "via the other replica\n"
        assert _execute(polled.people_url, namespace, "shared", alice, "print(x + 2)").json()["stdout"] == "42\n"

        # Streaming, through the replica the runtime does not poll.
        def on_line(line: dict[str, Any]) -> None:
            if line.get("text") == "first\n":
                (workspace / "go").touch()

        with httpx.Client() as http:
            lines = stream(http, other.people_url, namespace, "shared", alice, WAITS_FOR_ITS_READER, on_line)
        assert [line["kind"] for line in lines] == ["output", "output", "outcome"]
        assert lines[-1]["outcome"]["stdout"] == "first\nsecond\n" and lines[-1]["outcome"]["error"] is None
        refused = httpx.post(
            f"{other.people_url}/v1/sessions/{namespace}/shared/execute?stream=true",
            json={"code": "print(1)"},
            headers={"Authorization": "Bearer garbage"},
        )
        assert refused.status_code == 401  # refused before any line: a plain HTTP error

        # Bad input: clear errors, nothing run.
        huge = _execute(other.people_url, namespace, "shared", alice, "#" * (17 << 20))
        assert huge.status_code == 413, huge.text[:300]
        not_utf8 = httpx.post(
            f"{other.people_url}/v1/sessions/{namespace}/shared/execute",
            content=b'{"code": "print(\xff\xfe)"}',
            headers={"Authorization": f"Bearer {alice}", "Content-Type": "application/json"},
        )
        assert not_utf8.status_code == 400 and not_utf8.json()["error"]["code"] == "invalid_body", not_utf8.text
        # A snippet that never ends is stopped at its limit; one that floods is cut head and tail.
        endless = _execute(other.people_url, namespace, "shared", alice, "while True:\n    pass", timeout=1)
        assert endless.status_code == 200 and "SnippetTimeout" in endless.json()["error"]
        flooding = "for i in range(300_000):\n    print(i)"
        flood = _execute(other.people_url, namespace, "shared", alice, flooding, timeout=60)
        body = flood.json()
        assert flood.status_code == 200 and len(body["stdout"]) < 40_000 and "truncated" in body["stdout"]
        assert body["stdout"].endswith("299999\n")
        # ...and the session, its variables and both replicas go on.
        after = _execute(polled.people_url, namespace, "shared", alice, "print(x)")
        assert after.status_code == 200 and after.json()["stdout"] == "40\n"
