"""A person's side of the execute API through a fault: a session to run code in, an execution named by the caller's
own id (`Mcpexec-Execution-Id`), and what became of it, followed by that id on any replica until it has an outcome or
a final state (docs/sessions.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from kubernetes import client

from mcpexec.api.meta import AGENTSESSION_PLURAL
from tests.e2e.faults.release_state import is_ready, pods, sessions_url
from tests.e2e.release import API_VERSION, GROUP
from tests.e2e.sessions import create_session, wait_session
from tests.support.session_api import execute

EXECUTION_ID_HEADER = "Mcpexec-Execution-Id"
# The states an execution ends in, for its caller: `finished` (its outcome), `not_taken` (it never ran and never
# will), `interrupted` (its session ended while it ran), `lost` (the store lost its record: it may have run).
FINAL_STATES = {"finished", "not_taken", "interrupted", "lost"}


@contextmanager
def ready_session(namespace: str, name: str, pool: str, **spec: Any) -> Iterator[Any]:
    """An AgentSession, Ready; deleted afterwards, and its sandbox pod must go with it. Yields that pod."""
    create_session(namespace, name, pool, **spec)
    sandbox = wait_session(namespace, name, "Ready")["podName"]
    try:
        yield client.CoreV1Api().read_namespaced_pod(sandbox, namespace)
    finally:
        client.CustomObjectsApi().delete_namespaced_custom_object(
            GROUP, API_VERSION, namespace, AGENTSESSION_PLURAL, name
        )
    deadline = time.monotonic() + 90
    while True:
        listed: Any = client.CoreV1Api().list_namespaced_pod(namespace)
        if all(p.metadata.name != sandbox for p in listed.items):
            return
        assert time.monotonic() < deadline, f"session {name}'s sandbox {sandbox} outlived it"
        time.sleep(0.5)


def execute_until_queued(url: str, namespace: str, name: str, token: str, code: str) -> httpx.Response:
    """POST execute until the session store takes it: a 503 `session_store_unavailable` says nothing was queued (state
    `not_taken`: Redis could not be reached, or a replica's connection to it had not yet found out it restarted), so
    asking again is safe."""
    deadline = time.monotonic() + 120
    with httpx.Client() as http:
        while (answer := execute(http, url, namespace, name, token, code)).status_code == 503:
            assert _state(answer) == "not_taken" and time.monotonic() < deadline, answer.text
            time.sleep(0.5)
    return answer


def execute_as(
    url: str, namespace: str, name: str, token: str, code: str, execution_id: str, timeout: float = 30
) -> httpx.Response:
    """POST execute with the caller's own id for the execution; the answer, however long the gateway rides out a
    store it cannot reach."""
    with httpx.Client() as http:
        return http.post(
            f"{url}/v1/sessions/{namespace}/{name}/execute",
            json={"code": code, "timeoutSeconds": timeout},
            headers={"Authorization": f"Bearer {token}", EXECUTION_ID_HEADER: execution_id},
            timeout=timeout + 180,
        )


@dataclass
class Resolved:
    """What became of an execution: its final state, its outcome if it finished, and every answer its caller got on
    the way (status and body), first the execute API's."""

    state: str
    outcome: dict[str, Any] | None
    answers: list[str] = field(default_factory=list)


def _state(answer: httpx.Response) -> str | None:
    body = answer.json()
    return (body.get("error") or {}).get("state") if "error" in body else body.get("state")


def resolve(
    first: httpx.Response | None, namespace: str, name: str, token: str, execution_id: str, timeout: float = 240
) -> Resolved:
    """From the execute API's answer on (None: its connection broke, the replica died): an outcome is final; any
    other answer must say the execution's state, and one that is not final is followed by the execution's id
    (GET .../executions/{id}, any replica) until it is."""
    state: str | None
    if first is None:
        answers, state = ["no answer: the connection broke"], "unknown"
    elif first.status_code == 200:
        return Resolved("finished", first.json(), [f"200 {first.text[:300]}"])
    else:
        answers, state = [f"{first.status_code} {first.text[:300]}"], _state(first)
    assert state is not None, f"the caller was told neither an outcome nor the execution's state: {answers}"
    deadline = time.monotonic() + timeout
    while state not in FINAL_STATES:
        assert time.monotonic() < deadline, f"execution {execution_id} never ended: {answers}"
        time.sleep(1)
        replica = next((p for p in pods("gateway") if is_ready(p)), None)
        if replica is None:
            continue
        try:
            with httpx.Client() as http:
                answer = http.get(
                    f"{sessions_url(replica)}/v1/sessions/{namespace}/{name}/executions/{execution_id}",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=30,
                )
        except httpx.TransportError as exc:  # a replica on its way out: ask again
            answers.append(repr(exc))
            continue
        answers.append(f"{answer.status_code} {answer.text[:300]}")
        state = _state(answer)
        assert state is not None, f"re-attaching to {execution_id} did not say its state: {answers}"
        if state == "finished":
            return Resolved(state, answer.json()["outcome"], answers)
    return Resolved(state, None, answers)
