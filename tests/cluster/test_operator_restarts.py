"""An operator killed (SIGKILL) at random points of a burst of warm and cold tasks, and started again: every task
runs exactly once, in one sandbox, and nothing is left claimed that no task runs in.

No kubelet runs in this tier: a thread plays it (tests/cluster/kube.py: play_kubelet). It starts the pool's idle pods,
and runs a sandbox at once, whatever the operator is doing (it may be dead): a Job's pod (the Job controller made it:
its code runs), and a claimed pool pod once its task's status names it (the gateway assigns a warm sandbox its task
only then). Each run is counted per task; a task run twice, in a second Job or sandbox, shows there.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import (
    AGENTTASK_PLURAL,
    CLAIMED,
    GROUP,
    IDLE,
    SANDBOX_STATE_LABEL,
    SANDBOXPOOL_PLURAL,
    TASK_LABEL,
    VERSION,
)
from tests.cluster.kube import create_task, play_kubelet, wait_for
from tests.cluster.operator import get, operator_process
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

SEED = int(os.environ.get("MCPEXEC_TEST_SEED", "31"))  # the kill points and the burst's order
ROUNDS = 3
WARM, COLD = 10, 4  # a round's tasks: pooled (more than the pool holds: some go cold) and cold
REPLICAS = 6
DOWNTIME_SECONDS = 1.5  # the operator is away while its sandboxes run and finish


class Kubelet:
    """Plays the kubelet for one namespace until stopped, and counts which sandboxes ran each task."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.runs: dict[str, set[str]] = defaultdict(set)  # task uid -> uids of the pods that ran it
        self._stop = threading.Event()
        self._done: set[str] = set()
        self.errors: list[BaseException] = []

    def _run(self, pod: client.V1Pod, task_uid: str) -> None:
        if pod.metadata.uid in self._done:
            return
        play_kubelet(pod, "Succeeded", exit_code=0, message=f"ran {task_uid}")
        self._done.add(pod.metadata.uid)
        self.runs[task_uid].add(pod.metadata.uid)

    def _round(self) -> None:
        core = client.CoreV1Api()
        pods = {p.metadata.name: p for p in core.list_namespaced_pod(self.namespace).items}
        for pod in pods.values():
            labels = pod.metadata.labels or {}
            if pod.metadata.deletion_timestamp or (pod.status.phase or "Pending") != "Pending":
                continue
            if labels.get(SANDBOX_STATE_LABEL) == IDLE:
                play_kubelet(pod, "Running")
            elif "job-name" in labels:  # a Job's pod runs its task's code, whatever the operator does
                job_owner = pod.metadata.owner_references[0].name
                job = client.BatchV1Api().read_namespaced_job(job_owner, self.namespace)
                self._run(pod, job.metadata.owner_references[0].uid)
        for task in _tasks(self.namespace):
            claim = (task.get("status") or {}).get("claim") or {}
            pod = pods.get(claim.get("podName", ""))
            if pod is not None and pod.metadata.uid == claim.get("podUID") and pod.status.phase == "Running":
                self._run(pod, task["metadata"]["uid"])  # the gateway assigns it now: its code runs

    def loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except ApiException as exc:
                if exc.status not in (404, 409):  # a pod or Job deleted, or changed, while it was played
                    self.errors.append(exc)
            except Exception as exc:
                self.errors.append(exc)
            self._stop.wait(0.2)

    @contextmanager
    def running(self) -> Iterator[Kubelet]:
        thread = threading.Thread(target=self.loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=30)
        assert not self.errors, self.errors


def _pool(namespace: str) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SandboxPool",
        "metadata": {"name": "warm"},
        "spec": {"replicas": REPLICAS, "whenEmpty": "Cold", "template": {}},
    }
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, body)


def _burst(namespace: str, round_: int) -> list[str]:
    names = [f"r{round_}-warm-{i}" for i in range(WARM)] + [f"r{round_}-cold-{i}" for i in range(COLD)]
    random.Random(SEED + round_).shuffle(names)
    for name in names:
        spec = {"poolRef": {"name": "warm"}} if "warm" in name else {}
        create_task(namespace, agenttask(name, **spec))
    return names


def _tasks(namespace: str) -> list[dict[str, Any]]:
    listed = client.CustomObjectsApi().list_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL)
    return list(listed["items"])


def _children(namespace: str) -> tuple[dict[str, list[str]], dict[str, list[Any]]]:
    """Each task's Jobs (by uid), and the pods claimed for it that are not on their way out."""
    jobs: dict[str, list[str]] = defaultdict(list)
    for job in client.BatchV1Api().list_namespaced_job(namespace).items:
        for ref in job.metadata.owner_references or []:
            jobs[ref.uid].append(job.metadata.uid)
    claimed: dict[str, list[Any]] = defaultdict(list)
    selector = f"{SANDBOX_STATE_LABEL}={CLAIMED},{TASK_LABEL}"
    for pod in client.CoreV1Api().list_namespaced_pod(namespace, label_selector=selector).items:
        if pod.metadata.deletion_timestamp is None:
            for ref in pod.metadata.owner_references or []:
                claimed[ref.uid].append(pod)
    return jobs, claimed


def _live(health_port: int) -> None:
    wait_for(lambda: get(f"http://127.0.0.1:{health_port}/healthz"), 60, "operator liveness")


def _child_uids(namespace: str) -> set[str]:
    jobs, claimed = _children(namespace)
    return {uid for uids in jobs.values() for uid in uids} | {p.metadata.uid for ps in claimed.values() for p in ps}


def test_an_operator_killed_at_random_points_of_a_burst_runs_every_task_exactly_once(
    cluster: ControlPlane, namespace: str
) -> None:
    kills = random.Random(SEED)
    names: list[str] = []
    with Kubelet(namespace).running() as kubelet:
        _pool(namespace)
        for round_ in range(ROUNDS):
            health = free_port()
            with operator_process(cluster, health, free_port()) as operator:
                _live(health)
                burst = threading.Thread(target=lambda r=round_: names.extend(_burst(namespace, r)))
                burst.start()
                time.sleep(kills.uniform(0.2, 3.0))  # a kill during the burst, or while its reconciles run
                os.kill(operator.pid, signal.SIGKILL)
                operator.wait()
                burst.join()
            time.sleep(DOWNTIME_SECONDS)

        with operator_process(cluster, free_port(), free_port()):

            def all_succeeded() -> bool:
                phases = {t["metadata"]["name"]: (t.get("status") or {}).get("phase") for t in _tasks(namespace)}
                return len(phases) == len(names) and set(phases.values()) == {"Succeeded"}

            wait_for(all_succeeded, 180, f"all {len(names)} tasks Succeeded (seed {SEED})")
            time.sleep(3)  # sweeps (every second) delete what no task runs in
            tasks = _tasks(namespace)
            jobs, claimed = _children(namespace)
            for task in tasks:
                meta, status = task["metadata"], task["status"]
                where = f"{meta['name']} (seed {SEED})"
                assert len(kubelet.runs[meta["uid"]]) == 1, f"{where} ran {len(kubelet.runs[meta['uid']])} times"
                named = (status.get("claim") or {}).get("podUID")
                pods = claimed.get(meta["uid"], [])
                assert not (jobs.get(meta["uid"]) and len(pods)), f"{where} has a Job and a claimed sandbox"
                assert len(jobs.get(meta["uid"], [])) <= 1 and len(pods) <= 1, f"{where}: a second Job or sandbox"
                assert [p.metadata.uid for p in pods] == ([named] if named else []), f"{where}: an unnamed claim"
                assert bool(status.get("jobName")) != bool(named), f"{where} names one sandbox: {status}"
            assert {t["status"]["launchType"] for t in tasks} == {"Warm", "Cold"}, "the burst had both kinds"
        before = _child_uids(namespace)

        health = free_port()
        with operator_process(cluster, health, free_port()):
            _live(health)
            time.sleep(5)  # it resumes every task, and sweeps a few times
            assert _child_uids(namespace) == before, "a finished task got a new Job or sandbox"
            assert all(t["status"]["phase"] == "Succeeded" for t in _tasks(namespace))
        assert sum(map(len, kubelet.runs.values())) == len(names), "no sandbox ran after all finished"
