"""Issue 31.2: the gateway replica a session's sandbox talks to is killed while the session's code waits on it, in a
25 s tool call (the pod deleted at once, as a drain with no grace does), in a model call and in a streaming execution
(its process SIGKILLed, as an OOM kill or a crash does). The tool and the model get the call once; the code gets
`gateway_connection_lost` ("it may have run and was not resent"), never a silent second run; the caller, on the other
replica, gets the outcome once; the replica comes back."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.e2e.faults.calls import execute_as, ready_session, resolve
from tests.e2e.faults.conftest import POOL, SLOW, SLOW_SECONDS, Workspace
from tests.e2e.faults.disruptions import force_delete, sigkill
from tests.e2e.faults.figures import record_figures
from tests.e2e.faults.release_state import (
    other_gateway,
    serving_gateway,
    sessions_url,
    wait_ready,
    wait_release_ready,
    wait_restarted,
)
from tests.e2e.node import Node
from tests.e2e.release import RELEASE_NAMESPACE
from tests.e2e.sessions import wait_session
from tests.support.session_api import execute, stream

pytestmark = pytest.mark.e2e

LOST = "gateway_connection_lost 502"
REPORTED = """
except ToolError as exc:
    print("error", exc.code, exc.status, str(exc), flush=True)
"""
SLOW_TOOL = (
    f'try:\n    call_tool("rec/record", {{"label": "{{label}}", "seconds": {SLOW_SECONDS}}})\n    print("answered")'
    + REPORTED
)
SLOW_MODEL = f'try:\n    print("answered", ask_llm("{SLOW} {{label}}"))' + REPORTED
RUNS_ON = "call_tool('rec/record', {'label': 'caller'})\nimport time\ntime.sleep(5)\nprint('done')"
STREAMED = (
    'import time\nfor i in range(3):\n    print("tick", i, flush=True)\n    time.sleep(0.3)\n'
    + SLOW_TOOL
    + 'print("after", flush=True)\n'
)


def _kill_during(
    the_node: Node, sandbox_ip: str, start: Callable[[str], Any], started: Callable[[], None], how: str
) -> tuple[Any, float]:
    """Start the call through the replica the sandbox does not use (`start(url)`), wait until it reached its
    upstream (`started`), kill the replica the sandbox uses (`how`: "delete" or "sigkill"); the call's answer and
    the seconds until both replicas are Ready again."""
    wait_ready("gateway", 2)
    serving = serving_gateway(sandbox_ip)
    with ThreadPoolExecutor(1) as pool:
        answer: Future[Any] = pool.submit(start, sessions_url(other_gateway(serving)))
        started()
        killed_at = time.monotonic()
        if how == "delete":
            force_delete(RELEASE_NAMESPACE, serving.metadata.name)
            wait_ready("gateway", 2)
        else:
            restarts = sigkill(the_node, RELEASE_NAMESPACE, serving.metadata.name)
            wait_restarted("gateway", serving.metadata.name, restarts)
        recovered = time.monotonic() - killed_at
        return answer.result(timeout=120), recovered


def test_a_gateway_killed_under_a_call_never_runs_it_twice(e2e_node: Node, workspace: Workspace) -> None:
    ns, token, rec = workspace.namespace, workspace.token, workspace.recorder
    with ready_session(ns, "calls", POOL) as sandbox:
        sandbox_ip = str(sandbox.status.pod_ip)
        recovered = {}

        def run(code: str) -> Callable[[str], httpx.Response]:
            def start(url: str) -> httpx.Response:
                with httpx.Client() as http:
                    return execute(http, url, ns, "calls", token, code, timeout=60)

            return start

        # A 25 s tool call; its replica deleted at once (a drain with no grace).
        answer, recovered["tool"] = _kill_during(
            e2e_node, sandbox_ip, run(SLOW_TOOL.replace("{label}", "tool")), lambda: rec.wait_for("tool"), "delete"
        )
        assert answer.status_code == 200, answer.text
        assert f"error {LOST}" in answer.json()["stdout"], answer.json()
        assert "it may have run and was not resent" in answer.json()["stdout"], answer.json()

        # A model call; its replica SIGKILLed.
        def model_called() -> None:
            deadline = time.monotonic() + 60
            while workspace.llm_requests(f"{SLOW} model") == 0:
                assert time.monotonic() < deadline, "the model never got the call"
                time.sleep(0.05)

        answer, recovered["model"] = _kill_during(
            e2e_node, sandbox_ip, run(SLOW_MODEL.replace("{label}", "model")), model_called, "sigkill"
        )
        assert answer.status_code == 200, answer.text
        assert f"error {LOST}" in answer.json()["stdout"], answer.json()

        # A streaming execution: its output so far arrives, then the rest and the outcome, through the caller's replica.
        def streamed(url: str) -> list[dict[str, Any]]:
            with httpx.Client() as http:
                return stream(http, url, ns, "calls", token, STREAMED.replace("{label}", "stream"))

        lines, recovered["stream"] = _kill_during(
            e2e_node, sandbox_ip, streamed, lambda: rec.wait_for("stream"), "sigkill"
        )
        printed = "".join(line["text"] for line in lines if line["kind"] == "output")
        assert printed.startswith("tick 0\ntick 1\ntick 2\n"), lines
        assert lines[-1]["kind"] == "outcome", lines
        outcome = lines[-1]["outcome"]["stdout"]
        assert f"error {LOST}" in outcome and outcome.endswith("after\n"), lines

        # Well past the runtime's 30 s of retrying: each call reached its upstream once.
        wait_release_ready()
        counts = {
            "tool": rec.count("tool"),
            "model": workspace.llm_requests(f"{SLOW} model"),
            "stream": rec.count("stream"),
        }
        record_figures(
            "gateway replica killed during a call",
            calls=3, lost=0, doubled=sum(n - 1 for n in counts.values() if n > 1), mixed=0,
            recover_seconds={k: round(v, 1) for k, v in recovered.items()},
        )  # fmt: skip
        assert counts == {"tool": 1, "model": 1, "stream": 1}, counts
        assert wait_session(ns, "calls", "Ready"), "the session goes on"
        with httpx.Client() as http:
            after = execute(http, sessions_url(serving_gateway(sandbox_ip)), ns, "calls", token, "print('still here')")
        assert after.status_code == 200 and after.json()["stdout"] == "still here\n", after.text


def test_a_caller_whose_replica_dies_re_attaches_by_the_execution_id(e2e_node: Node, workspace: Workspace) -> None:
    """The replica a caller waits on is SIGKILLed while the session (on the other replica) runs its code: the code
    runs on, once, and the caller gets its outcome through the other replica by the execution's id."""
    ns, token, rec = workspace.namespace, workspace.token, workspace.recorder
    with ready_session(ns, "caller", POOL) as sandbox, ThreadPoolExecutor(1) as caller:
        wait_ready("gateway", 2)
        waited_on = other_gateway(serving_gateway(str(sandbox.status.pod_ip)))
        execution = uuid.uuid4().hex
        answer = caller.submit(execute_as, sessions_url(waited_on), ns, "caller", token, RUNS_ON, execution)
        rec.wait_for("caller")
        killed_at = time.monotonic()
        restarts = sigkill(e2e_node, RELEASE_NAMESPACE, waited_on.metadata.name)
        try:
            first: httpx.Response | None = answer.result(timeout=120)
        except httpx.TransportError:
            first = None
        resolved = resolve(first, ns, "caller", token, execution)
        reattached = time.monotonic() - killed_at
        wait_restarted("gateway", waited_on.metadata.name, restarts)
    record_figures(
        "the caller's gateway replica killed during an execution",
        lost=int(resolved.state != "finished"), doubled=int(rec.count("caller") > 1), mixed=0,
        outcome_seconds=round(reattached, 1), answers=resolved.answers[:3],
    )  # fmt: skip
    assert resolved.state == "finished" and resolved.outcome is not None, resolved
    assert resolved.outcome["stdout"] == "done\n", resolved
    assert rec.count("caller") == 1
