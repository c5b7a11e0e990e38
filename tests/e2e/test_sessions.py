"""AgentSessions on the node: a person's own token runs code in a warm gVisor sandbox through the execute API of
either gateway replica (they share the session through the chart's Redis), with variables kept, tools called, PII
tokenized and output streamed; the session ends, and its pod is gone, when it is deleted, idles past its timeout, or
its sandbox dies."""

from __future__ import annotations

import time

import httpx
import pytest
from kubernetes import client

from mcpexec.api.meta import AGENTSESSION_PLURAL
from tests.e2e.node import Node
from tests.e2e.release import API_VERSION, GROUP, crm_server
from tests.e2e.sessions import create_pool, create_session, gateway_urls, session_user, wait_pool, wait_session
from tests.e2e.test_pools import TEMPLATE
from tests.support.session_api import execute, stream

pytestmark = pytest.mark.e2e

POOL = "interactive"
STREAMED = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.5)"


def _pod_exists(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return any(p.metadata.name == name for p in core.list_namespaced_pod(namespace).items)


def _wait_pod_gone(core: client.CoreV1Api, namespace: str, name: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while _pod_exists(core, namespace, name):
        assert time.monotonic() < deadline, f"pod {name} still there"
        time.sleep(0.5)


def test_a_person_runs_code_in_a_warm_gvisor_session_through_either_replica(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str
) -> None:
    custom = client.CustomObjectsApi()
    crm_server(core, custom, namespace)
    create_pool(namespace, POOL, 2, TEMPLATE)
    wait_pool(namespace, POOL, 2)
    alice = session_user(namespace, "alice")
    urls = gateway_urls()
    assert len(urls) == 2, urls

    started = time.monotonic()
    create_session(namespace, "work", POOL, tools={"allow": ["crm/get_*"]})
    ready = wait_session(namespace, "work", "Ready")
    print(f"session create -> Ready (warm): {time.monotonic() - started:.2f}s")
    pod = ready["podName"]
    assert core.read_namespaced_pod(pod, namespace).spec.runtime_class_name == "gvisor"

    with httpx.Client() as http:
        first = execute(http, urls[0], namespace, "work", alice, "x = 40\nprint('hi')")
        assert first.status_code == 200, first.text
        assert first.json()["stdout"] == "hi\n"
        # The other replica: the same session, its variables, its tools, PII as tokens.
        code = "c = call_tool('crm/get_customer', {'customer_id': 'C001'})\nprint(x + 2, c['email'])"
        second = execute(http, urls[1], namespace, "work", alice, code)
        assert second.status_code == 200, second.text
        assert second.json()["stdout"].startswith("42 [EMAIL_"), second.json()
        assert "alice.martin" not in second.text
        # The session's narrower policy holds in the sandbox: what the pool allows but the session does not.
        refused = execute(http, urls[0], namespace, "work", alice, "call_tool('crm/send_message', {})")
        assert refused.status_code == 200 and "forbidden" in str(refused.json()["error"]), refused.json()

        # Streaming: the lines come while the snippet sleeps between them, then the outcome.
        lines = stream(http, urls[1], namespace, "work", alice, STREAMED)
        outputs = [line for line in lines if line["kind"] == "output"]
        assert len(outputs) >= 2 and "".join(o["text"] for o in outputs) == "tick 0\ntick 1\ntick 2\n", lines
        assert lines[-1]["kind"] == "outcome" and lines[-1]["outcome"]["stdout"] == "tick 0\ntick 1\ntick 2\n"

        # A snippet that never ends is stopped; the session goes on.
        endless = execute(http, urls[0], namespace, "work", alice, "while True:\n    pass", timeout=2)
        assert endless.status_code == 200 and "SnippetTimeout" in endless.json()["error"], endless.text
        assert execute(http, urls[0], namespace, "work", alice, "print(x)").json()["stdout"] == "40\n"

        # Deleting the session kills its pod.
        custom.delete_namespaced_custom_object(GROUP, API_VERSION, namespace, AGENTSESSION_PLURAL, "work")
        _wait_pod_gone(core, namespace, pod)

        # Idle past its timeout: Ended, pod gone.
        wait_pool(namespace, POOL, 2)
        create_session(namespace, "idle", POOL, idleTimeoutSeconds=5, maxLifetimeSeconds=600)
        idle_pod = wait_session(namespace, "idle", "Ready")["podName"]
        ended = wait_session(namespace, "idle", "Ended", timeout=60)
        assert ended["reason"] == "IdleTimeout", ended
        _wait_pod_gone(core, namespace, idle_pod)

        # A sandbox that dies ends its session with the reason.
        wait_pool(namespace, POOL, 2)
        create_session(namespace, "crash", POOL)
        crash_pod = wait_session(namespace, "crash", "Ready")["podName"]
        gone = execute(http, urls[0], namespace, "crash", alice, "import os\nos._exit(3)", timeout=5)
        assert gone.status_code in (410, 504, 200), gone.text
        ended = wait_session(namespace, "crash", "Ended", timeout=90)
        assert ended["reason"] == "SandboxGone", ended
        _wait_pod_gone(core, namespace, crash_pod)
        after = execute(http, urls[1], namespace, "crash", alice, "print(1)")
        assert after.status_code == 403 and after.json()["error"]["code"] == "no_session", after.text
