"""Deletion and garbage collection, TTL after finishing, the run-once guarantee, and isolation between namespaces."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import kopf.testing
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, VERSION
from tests.cluster.kube import (
    condition,
    create_namespace,
    create_task,
    job_pod,
    job_pod_of,
    kubectl,
    play_kubelet,
    read_task,
    task_status,
    wait_for,
    wait_phase,
)
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask


def _gone(read: Any) -> bool:
    try:
        read()
    except ApiException as exc:
        return exc.status == 404
    return False


def _wait_children_gone(api: dict[str, Any], namespace: str, name: str, how: str) -> None:
    """A task's Job, ServiceAccount, ConfigMap and NetworkPolicy (all named `name`) are gone, and its pod."""
    core, batch, net = api["core"], api["batch"], api["net"]
    for what, read in {
        "job": lambda: batch.read_namespaced_job(name, namespace),
        "service account": lambda: core.read_namespaced_service_account(name, namespace),
        "config map": lambda: core.read_namespaced_config_map(name, namespace),
        "network policy": lambda: net.read_namespaced_network_policy(name, namespace),
    }.items():
        wait_for(lambda read=read: _gone(read), 60, f"{what} {how}")
    wait_for(lambda: not core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items, 60, "pod")


def test_deleting_a_task_removes_its_children_but_keeps_skills(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    create_task(namespace, agenttask("cleanup", skills={"owner": "alice"}))
    wait_for(lambda: task_status(namespace, "cleanup").get("jobName"), what="job created")
    job_pod(namespace, "mcpexec-cleanup")
    api["custom"].delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "cleanup")
    _wait_children_gone(api, namespace, "mcpexec-cleanup", "garbage-collected")
    skills = api["core"].read_namespaced_persistent_volume_claim("skills-alice", namespace)
    assert skills.metadata.name == "skills-alice"


def test_ttl_after_finished_deletes_the_children_and_keeps_the_task(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    """Deleting the task would make a GitOps controller re-create it: its Job, pod, ConfigMap, ServiceAccount and
    NetworkPolicy go, the AgentTask and its result stay."""
    create_task(namespace, agenttask("shortlived", ttlSecondsAfterFinished=0))
    wait_for(lambda: task_status(namespace, "shortlived").get("jobName"), what="job created")
    play_kubelet(job_pod(namespace, "mcpexec-shortlived"), "Succeeded", exit_code=0, message="done")
    status = wait_for(lambda: (s := task_status(namespace, "shortlived")).get("childrenDeletedAt") and s, 60, "TTL")
    assert (status["phase"], status["result"]) == ("Succeeded", "done")
    _wait_children_gone(api, namespace, "mcpexec-shortlived", "deleted")
    assert read_task(namespace, "shortlived")["status"] == status


def _jobs_owned_by(namespace: str, uid: str) -> list[Any]:
    jobs = client.BatchV1Api().list_namespaced_job(namespace).items
    return [j for j in jobs if uid in {r.uid for r in j.metadata.owner_references or []}]


def _delete_and_reapply(cluster: ControlPlane, namespace: str, manifest: Path) -> str:
    """What a GitOps controller does to a task that went: apply the same manifest again. Returns the new uid."""
    client.CustomObjectsApi().delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "once")
    wait_for(lambda: _gone(lambda: read_task(namespace, "once")), 30, "task deleted")
    applied = kubectl(cluster, "apply", "-n", namespace, "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    return str(read_task(namespace, "once")["metadata"]["uid"])


def test_a_recreated_task_does_not_run_again_unless_asked(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """Finish, delete, re-apply the same manifest: no second Job, the earlier outcome with reason AlreadyRan. A new
    value of the run-again annotation runs it once more; the same value again does not."""
    manifest = tmp_path / "once.yaml"
    manifest.write_text(yaml.safe_dump(agenttask("once", code="send_invoice()")))
    assert kubectl(cluster, "apply", "-n", namespace, "-f", str(manifest)).returncode == 0
    wait_for(lambda: task_status(namespace, "once").get("jobName"), what="first run")
    play_kubelet(job_pod(namespace, "mcpexec-once"), "Succeeded", exit_code=0, message="sent")
    first = wait_phase(namespace, "once", "Succeeded")

    again = _delete_and_reapply(cluster, namespace, manifest)
    status = wait_phase(namespace, "once", "Succeeded")
    assert condition(status, "Succeeded")["reason"] == "AlreadyRan"
    message = condition(status, "Succeeded")["message"]
    assert "already ran" in message and "mcpexec.dev/run-again" in message and "new name" in message
    assert "result" not in status and status["completionTime"] >= first["completionTime"]
    time.sleep(3)  # the operator had every chance to start a Job
    assert _jobs_owned_by(namespace, again) == []
    events = client.CoreV1Api().list_namespaced_event(namespace, field_selector=f"involvedObject.uid={again}").items
    assert [e.reason for e in events] == ["Succeeded"]

    document = yaml.safe_load(manifest.read_text())
    document["metadata"]["annotations"] = {"mcpexec.dev/run-again": "2026-05-01"}
    manifest.write_text(yaml.safe_dump(document))
    rerun = _delete_and_reapply(cluster, namespace, manifest)
    wait_for(lambda: _jobs_owned_by(namespace, rerun), 90, "a second run's Job")
    play_kubelet(job_pod_of(namespace, "mcpexec-once", rerun), "Succeeded", exit_code=0, message="sent again")
    assert wait_phase(namespace, "once", "Succeeded")["result"] == "sent again"

    third = _delete_and_reapply(cluster, namespace, manifest)
    assert condition(wait_phase(namespace, "once", "Succeeded"), "Succeeded")["reason"] == "AlreadyRan"
    time.sleep(3)
    assert _jobs_owned_by(namespace, third) == []


def test_an_edited_spec_recreated_under_a_name_that_ran_does_not_run_silently(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    """A Replace (Argo CD) or force (Flux) sync of an edited spec deletes and re-creates the task: it fails, saying
    how to run it (a new name, or the run-again annotation), instead of running the new code unasked."""
    create_task(namespace, agenttask("edited", code="print(1)"))
    wait_for(lambda: task_status(namespace, "edited").get("jobName"), what="first run")
    client.CustomObjectsApi().delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "edited")
    wait_for(lambda: _gone(lambda: read_task(namespace, "edited")), 30, "task deleted")
    uid = create_task(namespace, agenttask("edited", code="print(2)"))["metadata"]["uid"]
    done = wait_phase(namespace, "edited", "Failed")
    succeeded = condition(done, "Succeeded")
    assert (succeeded["status"], succeeded["reason"]) == ("False", "SpecChangedAfterRun")
    assert condition(done, "Stalled")["status"] == "True"
    time.sleep(2)
    assert _jobs_owned_by(namespace, uid) == []


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
    # Opted in: a name that ran is not run again otherwise (test_a_recreated_task_does_not_run_again_unless_asked).
    rerun = agenttask("again", code="print('new')")
    rerun["metadata"]["annotations"] = {"mcpexec.dev/run-again": "yes"}
    new_uid = create_task(namespace, rerun)["metadata"]["uid"]

    def new_job() -> Any:
        try:
            job = api["batch"].read_namespaced_job("mcpexec-again", namespace)
        except ApiException:
            return None
        return job if job.metadata.uid != old_job_uid else None

    job = wait_for(new_job, 90, "a fresh job for the new task")
    assert [r.uid for r in job.metadata.owner_references] == [new_uid]
