"""Deletion and garbage collection, TTL after finishing, and isolation between namespaces."""

from __future__ import annotations

import json
from typing import Any

import kopf.testing
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, VERSION
from tests.cluster.kube import (
    create_namespace,
    create_task,
    job_pod,
    play_kubelet,
    read_task,
    task_status,
    wait_for,
    wait_phase,
)
from tests.support.malformed import agenttask


def _gone(read: Any) -> bool:
    try:
        read()
    except ApiException as exc:
        return exc.status == 404
    return False


def test_deleting_a_task_removes_its_children_but_keeps_skills(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    create_task(namespace, agenttask("cleanup", skills={"owner": "alice"}))
    wait_for(lambda: task_status(namespace, "cleanup").get("jobName"), what="job created")
    job_pod(namespace, "mcpexec-cleanup")
    core, batch, net = api["core"], api["batch"], api["net"]
    api["custom"].delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "cleanup")
    name = "mcpexec-cleanup"
    for what, read in {
        "job": lambda: batch.read_namespaced_job(name, namespace),
        "service account": lambda: core.read_namespaced_service_account(name, namespace),
        "config map": lambda: core.read_namespaced_config_map(name, namespace),
        "network policy": lambda: net.read_namespaced_network_policy(name, namespace),
    }.items():
        wait_for(lambda read=read: _gone(read), 60, f"{what} garbage-collected")
    wait_for(
        lambda: not core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items,
        60,
        "pods garbage-collected",
    )
    assert core.read_namespaced_persistent_volume_claim("skills-alice", namespace).metadata.name == "skills-alice"


def test_ttl_after_finished_deletes_the_task(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    create_task(namespace, agenttask("shortlived", ttlSecondsAfterFinished=0))
    wait_for(lambda: task_status(namespace, "shortlived").get("jobName"), what="job created")
    play_kubelet(job_pod(namespace, "mcpexec-shortlived"), "Succeeded", exit_code=0, message="done")
    wait_for(lambda: _gone(lambda: read_task(namespace, "shortlived")), 60, "task deleted after its TTL")


def test_tasks_in_two_namespaces_never_touch_each_other(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    other = create_namespace()
    try:
        uids = {
            ns: create_task(ns, agenttask("same", code=f"print({ns!r})"))["metadata"]["uid"]
            for ns in (namespace, other)
        }
        for ns in (namespace, other):
            wait_for(lambda ns=ns: task_status(ns, "same").get("jobName"), what=f"job in {ns}")
            job = api["batch"].read_namespaced_job("mcpexec-same", ns)
            assert [r.uid for r in job.metadata.owner_references] == [uids[ns]]
            config = json.loads(api["core"].read_namespaced_config_map("mcpexec-same", ns).data["task.json"])
            assert (config["namespace"], config["uid"], config["code"]) == (ns, uids[ns], f"print({ns!r})")

        play_kubelet(job_pod(namespace, "mcpexec-same"), "Succeeded", exit_code=0, message="first")
        assert wait_phase(namespace, "same", "Succeeded")["result"] == "first"
        assert task_status(other, "same")["phase"] == "Pending"

        api["custom"].delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "same")
        wait_for(lambda: _gone(lambda: api["batch"].read_namespaced_job("mcpexec-same", namespace)), 60, "gc")
        assert api["batch"].read_namespaced_job("mcpexec-same", other).metadata.uid
        play_kubelet(job_pod(other, "mcpexec-same"), "Succeeded", exit_code=0, message="second")
        assert wait_phase(other, "same", "Succeeded")["result"] == "second"
    finally:
        client.CoreV1Api().delete_namespace(other)


def test_recreated_task_never_adopts_the_old_tasks_job(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    """A new task with an old name waits for the old Job to be collected rather than reporting its result."""
    create_task(namespace, agenttask("again"))
    wait_for(lambda: task_status(namespace, "again").get("jobName"), what="first job")
    old_job_uid = api["batch"].read_namespaced_job("mcpexec-again", namespace).metadata.uid
    api["custom"].delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "again")
    wait_for(lambda: _gone(lambda: read_task(namespace, "again")), 30, "old task deleted")
    new_uid = create_task(namespace, agenttask("again", code="print('new')"))["metadata"]["uid"]

    def new_job() -> Any:
        try:
            job = api["batch"].read_namespaced_job("mcpexec-again", namespace)
        except ApiException:
            return None
        return job if job.metadata.uid != old_job_uid else None

    job = wait_for(new_job, 90, "a fresh job for the new task")
    assert [r.uid for r in job.metadata.owner_references] == [new_uid]
