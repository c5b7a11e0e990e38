"""Two operator replicas electing a leader on a Lease (controller/leader.py): one active at a time, the other alive
and waiting; a killed leader is replaced within 15 s; a frozen one that wakes after losing the Lease exits before it
acts."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controller.leader import LEASE_NAME
from tests.cluster.kube import create_task, task_status, wait_for
from tests.cluster.operator import get, operator_process
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

FAILOVER_SECONDS = 15


class Replica:
    def __init__(self, proc: subprocess.Popen[bytes], health: int, metrics: int, log: Path) -> None:
        self.proc, self.health, self.metrics, self.log = proc, health, metrics, log

    def alive(self) -> bool:
        return get(f"http://127.0.0.1:{self.health}/healthz") is not None

    def active(self) -> bool:
        """kopf runs (its start serves the metrics): the standby serves its liveness only."""
        return get(f"http://127.0.0.1:{self.metrics}/metrics") is not None


@contextmanager
def _replicas(cluster: ControlPlane, namespace: str, tmp_path: Path) -> Iterator[list[Replica]]:
    with ExitStack() as stack:
        replicas = []
        for i in range(2):
            health, metrics, log = free_port(), free_port(), tmp_path / f"replica-{i}.log"
            settings = {"LEADER_ELECTION": "true", "LEADER_ELECTION_NAMESPACE": namespace}
            proc = stack.enter_context(operator_process(cluster, health, metrics, log, **settings))
            replicas.append(Replica(proc, health, metrics, log))
        for replica in replicas:
            wait_for(replica.alive, 60, "every replica alive, leading or waiting")
        yield replicas


def _holder(namespace: str) -> str | None:
    try:
        lease = client.CoordinationV1Api().read_namespaced_lease(LEASE_NAME, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return lease.spec.holder_identity if lease.spec else None


def _leader(replicas: list[Replica], namespace: str) -> tuple[Replica, Replica]:
    holder = wait_for(lambda: _holder(namespace), 60, "a leader")
    (leader,) = [r for r in replicas if holder.endswith(f"_{r.proc.pid}")]
    wait_for(leader.active, 60, "the leader's operator running")
    (standby,) = [r for r in replicas if r is not leader]
    assert standby.alive() and not standby.active(), "one replica active, the other only alive"
    return leader, standby


def _jobs_of(namespace: str, name: str) -> list[Any]:
    jobs = client.BatchV1Api().list_namespaced_job(namespace).items
    return [j for j in jobs if j.metadata.name == f"mcpexec-{name}"]


def _accepted(namespace: str, name: str) -> None:
    wait_for(lambda: task_status(namespace, name).get("jobName"), 60, f"{name}'s Job")
    assert len(_jobs_of(namespace, name)) == 1


def test_a_killed_leader_is_replaced_within_fifteen_seconds(
    cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    with _replicas(cluster, namespace, tmp_path) as replicas:
        leader, standby = _leader(replicas, namespace)
        create_task(namespace, agenttask("before"))
        _accepted(namespace, "before")

        os.kill(leader.proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        create_task(namespace, agenttask("during"))
        wait_for(lambda: (_holder(namespace) or "").endswith(f"_{standby.proc.pid}"), FAILOVER_SECONDS, "a new leader")
        wait_for(standby.active, FAILOVER_SECONDS, "the standby's operator running")
        took = time.monotonic() - killed
        assert took < FAILOVER_SECONDS, f"failover took {took:.1f} s"
        _accepted(namespace, "during")
        assert len(_jobs_of(namespace, "before")) == 1


def test_a_frozen_leader_that_wakes_after_losing_the_lease_exits_before_it_acts(
    cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    with _replicas(cluster, namespace, tmp_path) as replicas:
        leader, standby = _leader(replicas, namespace)
        os.kill(leader.proc.pid, signal.SIGSTOP)  # a VM paused, a process stalled: it cannot renew, nor act
        create_task(namespace, agenttask("frozen"))
        wait_for(standby.active, 60, "the standby leading")
        _accepted(namespace, "frozen")
        woke = leader.log.stat().st_size
        os.kill(leader.proc.pid, signal.SIGCONT)  # it wakes with the task's event waiting in its watch
        assert leader.proc.wait(timeout=30) == 1, "it ends itself: it may no longer lead"
        after = leader.log.read_bytes()[woke:].decode(errors="replace")
        assert "lost the operator's leadership" in after
        assert f"reconciled AgentTask {namespace}/frozen" in standby.log.read_text(errors="replace"), "the standby did"
        assert "reconciled AgentTask" not in after, after[-2000:]
        time.sleep(2)
        assert len(_jobs_of(namespace, "frozen")) == 1 and standby.active()
