"""Two gateway replicas against a real API server, sharing AgentSessions' executions through a real redis-server:
the session's runtime polls one replica while its person calls the execute API of the other; the execute API
streams; hostile input is answered clearly and leaves the session working. No operator runs in this module: the
session's Ready status is written by the test, as the operator would write it (tests/cluster/test_sessions.py has
the operator's side)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client

from tests.cluster import kube
from tests.cluster.test_gateway_pools import POOL_ACCOUNT, _pod_token, _pool_account, _pool_pod, pool_runtime
from tests.cluster.test_gateway_sessions import SessionsGateway, _execute, _ready_session, _session_user_role, _user
from tests.support.components import free_port, redis_server
from tests.support.control_plane import ControlPlane
from tests.support.redis_process import RedisProcess
from tests.support.session_api import RUNS_UNTIL_GO, lines_in, stream

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
        assert [line["kind"] for line in lines] == ["execution", "output", "output", "outcome"]
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


@pytest.mark.timeout(300)
def test_a_caller_whose_replica_dies_re_attaches_through_another_and_the_code_runs_once(
    cluster: ControlPlane, namespace: str
) -> None:
    """Issue 31.3: a streaming caller learns its execution's id at once (header, first line); its replica dies while
    the code runs; through another replica it learns the execution runs (202), reads the rest of its stream after
    the chunk it had, then its outcome (200), and the code ran once. The execute API's own ids: sent again with the
    same id, an execution is the same one; with a store that cannot be reached, nothing is queued (503, not_taken)."""
    alice = _user(namespace, "alice", _session_user_role())
    auth = {"Authorization": f"Bearer {alice}"}
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-ddddd")
    polled_port = free_port()
    _ready_session(namespace, "shared", pod)
    with (
        RedisProcess() as redis,
        SessionsGateway(cluster, polled_port, redis.url) as polled,
        SessionsGateway(cluster, None, redis.url) as doomed,
        pool_runtime(_pod_token(namespace, pod), polled_port) as (_runtime, workspace),
        httpx.Client(timeout=60) as http,
    ):
        execute_url = f"{doomed.people_url}/v1/sessions/{namespace}/shared/execute?stream=true"
        with http.stream(
            "POST", execute_url, json={"code": RUNS_UNTIL_GO, "timeoutSeconds": 60}, headers=auth
        ) as answer:
            execution_id = answer.headers["mcpexec-execution-id"]
            lines = answer.iter_lines()
            assert json.loads(next(lines)) == {"kind": "execution", "executionId": execution_id}
            assert json.loads(next(lines)) == {"kind": "output", "seq": 1, "stream": "stdout", "text": "started\n"}
            doomed.freeze()
        assert lines_in(workspace / "ran.log") == 1

        url = f"{polled.people_url}/v1/sessions/{namespace}/shared/executions/{execution_id}"
        running = http.get(url, headers=auth)
        assert running.status_code == 202 and running.json() == {"executionId": execution_id, "state": "running"}
        (workspace / "go").touch()
        with http.stream("GET", f"{url}?stream=true&after=1", headers=auth) as answer:
            assert answer.status_code == 200 and answer.headers["mcpexec-execution-id"] == execution_id
            rest = [json.loads(line) for line in answer.iter_lines()]
        assert [line["kind"] for line in rest] == ["execution", "output", "outcome"], rest
        assert rest[1]["text"] == "done\n" and rest[1]["seq"] == 2
        outcome = rest[2]["outcome"]
        assert outcome["stdout"] == "started\ndone\n" and outcome["executionId"] == execution_id
        finished = http.get(url, headers=auth)
        assert finished.status_code == 200, finished.text
        assert finished.json() == {"executionId": execution_id, "state": "finished", "outcome": outcome}
        assert lines_in(workspace / "ran.log") == 1

        # The caller's own id: the same execution when sent again (run once), other code under it refused.
        mine = {**auth, "Mcpexec-Execution-Id": "alice-0000000001"}
        plain = f"{polled.people_url}/v1/sessions/{namespace}/shared/execute"
        counted = "with open('counted.log', 'a') as log:\n    log.write('x')\nprint('counted')"
        first = http.post(plain, json={"code": counted}, headers=mine)
        assert first.status_code == 200 and first.headers["mcpexec-execution-id"] == "alice-0000000001"
        assert first.json()["executionId"] == "alice-0000000001" and first.json()["stdout"] == "counted\n"
        assert http.post(plain, json={"code": counted}, headers=mine).json() == first.json()
        assert (workspace / "counted.log").read_text() == "x"
        other = http.post(plain, json={"code": "print(2)"}, headers=mine)
        assert other.status_code == 409 and other.json()["error"]["code"] == "execution_id_in_use", other.text
        bad = http.post(plain, json={"code": "print(2)"}, headers={**auth, "Mcpexec-Execution-Id": "no spaces"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_request"

        # The store away: nothing is queued, and the answer says so (sent again later, it runs once).
        redis.kill()
        refused = http.post(plain, json={"code": counted}, headers=auth)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
        body = refused.json()["error"]
        assert body["code"] == "session_store_unavailable" and body["state"] == "not_taken"
        assert body["executionId"] == refused.headers["mcpexec-execution-id"]
        redis.start("kept")
        resent = http.post(plain, json={"code": counted}, headers={**auth, "Mcpexec-Execution-Id": body["executionId"]})
        assert resent.status_code == 200 and resent.json()["stdout"] == "counted\n", resent.text
        assert (workspace / "counted.log").read_text() == "xx"


@pytest.mark.timeout(300)
def test_re_attaching_is_authorized_as_execute_and_sees_only_its_own_sessions_executions(
    cluster: ControlPlane, namespace: str
) -> None:
    """Another session's execution id (here, or in another namespace with rights there), an id never given out,
    garbage for an id: 404; no rights: 403; no or a garbage token: 401; an `after` past any chunk still ends with the
    outcome; one past the bound is refused (422)."""
    role = _session_user_role()
    alice, mallory = _user(namespace, "alice", role), _user(namespace, "mallory", None)
    auth = {"Authorization": f"Bearer {alice}"}
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-aaaaa")
    polled_port = free_port()
    _ready_session(namespace, "mine", pod)
    _ready_session(namespace, "neighbour", _pool_pod(namespace, f"{POOL_ACCOUNT}-nnnnn"))
    elsewhere = kube.create_namespace()
    try:
        bob = _user(elsewhere, "bob", role)
        _pool_account(elsewhere)
        _ready_session(elsewhere, "mine", _pool_pod(elsewhere, f"{POOL_ACCOUNT}-eeeee"))
        with (
            redis_server() as redis_url,
            SessionsGateway(cluster, polled_port, redis_url) as gateway,
            pool_runtime(_pod_token(namespace, pod), polled_port),
            httpx.Client(timeout=60) as http,
        ):
            done = _execute(gateway.people_url, namespace, "mine", alice, "print('secret')")
            assert done.status_code == 200, done.text
            execution_id = done.headers["mcpexec-execution-id"]
            base = f"{gateway.people_url}/v1/sessions"
            own = f"{base}/{namespace}/mine/executions/{execution_id}"
            assert http.get(own, headers=auth).json()["outcome"]["stdout"] == "secret\n"

            for url, token in (
                (f"{base}/{namespace}/neighbour/executions/{execution_id}", alice),
                (f"{base}/{elsewhere}/mine/executions/{execution_id}", bob),
                (f"{base}/{namespace}/mine/executions/0123456789abcdef0123456789abcdef", alice),
                (f"{base}/{namespace}/mine/executions/..%2F..%2Fx", alice),
                (f"{base}/{namespace}/mine/executions/{'a' * 5000}", alice),
                (f"{base}/{namespace}/mine/executions/%00%ff", alice),
            ):
                for suffix in ("", "?stream=true"):
                    answer = http.get(url + suffix, headers={"Authorization": f"Bearer {token}"})
                    assert answer.status_code == 404, (url[:200], answer.status_code, answer.text[:300])
                    assert answer.json()["error"]["code"] == "not_found" and "secret" not in answer.text
            assert http.get(f"{base}/{elsewhere}/mine/executions/{execution_id}", headers=auth).status_code == 403
            assert http.get(own, headers={"Authorization": f"Bearer {mallory}"}).status_code == 403
            assert http.get(own, headers={"Authorization": "Bearer garbage"}).status_code == 401
            assert http.get(own).status_code == 401

            with http.stream("GET", f"{own}?stream=true&after={1 << 40}", headers=auth) as answer:
                lines = [json.loads(line) for line in answer.iter_lines()]
            assert [line["kind"] for line in lines] == ["execution", "outcome"]
            assert lines[1]["outcome"]["stdout"] == "secret\n"
            huge = http.get(f"{own}?stream=true&after={10**30}", headers=auth)
            assert huge.status_code == 422 and huge.json()["error"]["code"] == "invalid_request"
    finally:
        client.CoreV1Api().delete_namespace(elsewhere)
