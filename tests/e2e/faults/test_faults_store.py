"""Issue 31.3: the session store (the bundled Redis) unreachable for 5 s (and, in the full tier, for 60 s: every
packet to or from it dropped, as behind a partition) or OOM-killed and restarted, while a session runs code and its
caller waits, and while another caller sends code. The session survives (the outage is shorter than its idle
timeout); each caller gets its outcome exactly once, or a precise state it can follow by the execution's id to the
end; an execution said not to have run never runs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager

import httpx
import pytest

from tests.e2e.faults.calls import Resolved, execute_as, execute_until_queued, ready_session, resolve
from tests.e2e.faults.conftest import POOL, Workspace
from tests.e2e.faults.disruptions import sigkill, unreachable
from tests.e2e.faults.figures import FULL, record_figures
from tests.e2e.faults.release_state import (
    REDIS_SERVICE,
    pods,
    service_ip,
    sessions_url,
    wait_release_ready,
    wait_restarted,
)
from tests.e2e.node import Node
from tests.e2e.release import RELEASE_NAMESPACE
from tests.e2e.sessions import wait_session
from tests.support.session_api import execute

pytestmark = pytest.mark.e2e

IDLE_TIMEOUT = 300  # longer than any outage here
RUNNING = "call_tool('rec/record', {'label': 'LABEL'})\nimport time\ntime.sleep(3)\nprint('done')"
SENT_DURING = "call_tool('rec/record', {'label': 'LABEL'})\nprint('late')"


@contextmanager
def _partition(seconds: float) -> Iterator[None]:
    """Redis' pod and Service unreachable for `seconds` from the moment the block is entered."""
    redis = pods("redis")[0]
    started = time.monotonic()
    with unreachable(str(redis.status.pod_ip), service_ip(REDIS_SERVICE)):
        yield
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))


@contextmanager
def _oom_kill(the_node: Node) -> Iterator[None]:
    """Redis SIGKILLed (what the OOM killer does); the kubelet starts it again, from its append-only file."""
    redis = pods("redis")[0].metadata.name
    restarts = sigkill(the_node, RELEASE_NAMESPACE, redis)
    yield
    wait_restarted("redis", redis, restarts)


FAULTS: dict[str, Callable[[Node], AbstractContextManager[None]]] = {
    "unreachable 5 s": lambda _: _partition(5),
    **({"unreachable 60 s": lambda _: _partition(60), "OOM-killed": _oom_kill} if FULL else {}),
}


def _check_sent_during(resolved: Resolved, count: int) -> None:
    """An execution sent while the store was away: it ran once, or it was said not to have run and never did, or it
    may have run (its session ended under it, or the store lost it) and ran at most once."""
    if resolved.state == "finished":
        assert resolved.outcome is not None and resolved.outcome["stdout"] == "late\n", resolved
        assert count == 1, resolved
    elif resolved.state == "not_taken":
        assert count == 0, f"said not to have run, but it ran: {resolved}"
    else:
        assert count <= 1, resolved


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_session_rides_out_its_store_going_away(e2e_node: Node, workspace: Workspace, fault: str) -> None:
    ns, token, rec = workspace.namespace, workspace.token, workspace.recorder
    wait_release_ready()
    name = f"store-{uuid.uuid4().hex[:6]}"
    running_label, during_label = f"{name}-running", f"{name}-during"
    with ready_session(ns, name, POOL, idleTimeoutSeconds=IDLE_TIMEOUT), ThreadPoolExecutor(2) as callers:
        first, second = (sessions_url(p) for p in pods("gateway"))
        with httpx.Client() as http:
            warm = execute(http, first, ns, name, token, "print('warm')")
        assert warm.status_code == 200, warm.text
        running_id, during_id = uuid.uuid4().hex, uuid.uuid4().hex
        running = callers.submit(
            execute_as, first, ns, name, token, RUNNING.replace("LABEL", running_label), running_id
        )
        rec.wait_for(running_label)
        with FAULTS[fault](e2e_node):
            time.sleep(1)
            during = callers.submit(
                execute_as, second, ns, name, token, SENT_DURING.replace("LABEL", during_label), during_id
            )
        restored_at = time.monotonic()
        # The session goes on: new code runs.
        alive = execute_until_queued(second, ns, name, token, "print('alive')")
        recovered = time.monotonic() - restored_at
        assert alive.status_code == 200 and alive.json()["stdout"] == "alive\n", alive.text
        assert wait_session(ns, name, "Ready")

        resolved = resolve(running.result(timeout=300), ns, name, token, running_id)
        resolved_during = resolve(during.result(timeout=300), ns, name, token, during_id)
    counts = {"running": rec.count(running_label), "during": rec.count(during_label)}
    record_figures(
        f"session store {fault}",
        lost=int(resolved.state != "finished"), doubled=sum(n > 1 for n in counts.values()), mixed=0,
        recover_seconds=round(recovered, 1), states={"running": resolved.state, "during": resolved_during.state},
    )  # fmt: skip
    assert counts["running"] == 1, (counts, resolved)
    # Nothing lost the record of the running execution: its caller gets its outcome, once.
    assert resolved.state == "finished" or (fault == "OOM-killed" and resolved.state == "lost"), resolved
    if resolved.state == "finished":
        assert resolved.outcome is not None and resolved.outcome["stdout"] == "done\n", resolved
    _check_sent_during(resolved_during, counts["during"])
