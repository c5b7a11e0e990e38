"""The run-once records against a real API server and the real operator: tens of thousands of runs in one namespace
still refuse a re-applied old name, records go past their retention (and the name may run again), a legacy
namespace-wide ledger is migrated at start, and a status an older operator wrote does not stop the reconcile."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controller import ledger, runs
from controller.kube import Cluster, api_client
from controller.naming import run_record_name
from mcpexec.api.agenttask import Phase
from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, RUN_RECORD_LABEL, VERSION
from mcpexec.api.timestamps import format_time
from tests.cluster.kube import condition, create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.cluster.operator import get, operator_process
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

RUNS = 20_000


@pytest.fixture
def running(cluster: ControlPlane) -> Iterator[None]:
    """The operator as a process of its own, started for each test (a legacy ledger is migrated when it starts)."""
    health = free_port()
    with operator_process(cluster, health, free_port()):
        wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz"), 60, "operator liveness")
        yield


def _run(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    """A task run to success, as the operator and a kubelet do it."""
    create_task(namespace, agenttask(name, **spec))
    wait_for(lambda: task_status(namespace, name).get("jobName"), what=f"{name}'s Job")
    play_kubelet(job_pod(namespace, f"mcpexec-{name}"), "Succeeded", exit_code=0, message="done")
    return wait_phase(namespace, name, "Succeeded")


def _recreate(namespace: str, name: str, **spec: Any) -> str:
    custom = client.CustomObjectsApi()
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, name)

    def gone() -> bool:
        try:
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, name)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, 30, f"{name} deleted")
    return str(create_task(namespace, agenttask(name, **spec))["metadata"]["uid"])


def _records(namespace: str) -> int:
    total, token = 0, None
    while True:
        page = client.CoreV1Api().list_namespaced_config_map(
            namespace, label_selector=RUN_RECORD_LABEL, limit=5000, _continue=token
        )
        total += len(page.items)
        token = page.metadata._continue
        if not token:
            return total


def _jobs_of(namespace: str, uid: str) -> list[Any]:
    jobs = client.BatchV1Api().list_namespaced_job(namespace).items
    return [j for j in jobs if uid in {r.uid for r in j.metadata.owner_references or []}]


def test_twenty_thousand_runs_in_a_namespace_still_refuse_a_reapplied_old_name(running: None, namespace: str) -> None:
    """The earlier ledger kept the latest 2000 names of a namespace: the 2001st run let the first run again."""
    first = _run(namespace, "first")
    cluster = Cluster(api_client(pool_size=20))
    taken = []

    def launch(i: int) -> None:  # each one the launch decision a run of that name takes
        document = agenttask(f"run-{i}")
        document["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()))
        taken.append(runs.take(cluster, document))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(launch, range(RUNS)))
    assert all(isinstance(t, runs.Taken) and not t.resumed for t in taken)
    assert _records(namespace) == RUNS + 1

    again = _recreate(namespace, "first")
    status = wait_phase(namespace, "first", "Succeeded")
    assert condition(status, "Succeeded")["reason"] == "AlreadyRan"
    assert "result" not in status and status["completionTime"] >= first["completionTime"]
    assert _jobs_of(namespace, again) == []
    assert runs.sweep(cluster, retention_days=30) == 0, "nothing is past the retention"
    _run(namespace, "newcomer")  # a name that never ran still runs


def _stored_spec_hash(namespace: str, name: str) -> str:
    """The hash of the spec as the API server stores a task's (its defaults applied): a dry-run create."""
    stored = client.CustomObjectsApi().create_namespaced_custom_object(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, agenttask(name), dry_run="All"
    )
    return ledger.spec_hash(stored["spec"])


def _write_record(namespace: str, name: str, started: datetime, finished: datetime | None) -> None:
    record = ledger.RunRecord(
        uid="earlier",
        spec_hash=_stored_spec_hash(namespace, name),
        started=format_time(started),
        phase=Phase.SUCCEEDED if finished else None,
        finished=format_time(finished) if finished else None,
    )
    client.CoreV1Api().create_namespaced_config_map(namespace, ledger.manifest(namespace, name, record))


def test_records_past_the_retention_go_and_their_names_may_run_again(running: None, namespace: str) -> None:
    now = datetime.now(UTC)
    _write_record(namespace, "old", now - timedelta(days=45), now - timedelta(days=40))
    _write_record(namespace, "recent", now - timedelta(days=11), now - timedelta(days=10))
    _write_record(namespace, "unfinished", now - timedelta(days=30, hours=12), None)  # may still run: a day's grace
    cluster = Cluster(api_client(pool_size=4))
    assert runs.sweep(cluster, retention_days=0) == 0, "0 keeps records for ever"
    assert runs.sweep(cluster, retention_days=30) == 1
    core = client.CoreV1Api()
    names = {c.metadata.name for c in core.list_namespaced_config_map(namespace, label_selector=RUN_RECORD_LABEL).items}
    assert names == {run_record_name("recent"), run_record_name("unfinished")}

    create_task(namespace, agenttask("recent"))
    assert condition(wait_phase(namespace, "recent", "Succeeded"), "Succeeded")["reason"] == "AlreadyRan"
    _run(namespace, "old")  # forgotten: it runs again


def test_a_legacy_ledger_is_migrated_when_the_operator_starts(cluster: ControlPlane, namespace: str) -> None:
    """An upgrade keeps refusing the names the namespace-wide ledger of earlier versions holds, and never writes it."""
    entry = ledger.RunRecord(
        uid="earlier",
        spec_hash=_stored_spec_hash(namespace, "legacy"),
        started="2026-01-01T00:00:00Z",
        phase=Phase.FAILED,
        reason="Failed",
        finished="2026-01-01T00:01:00Z",
    )
    data = {"legacy": entry.model_dump_json(by_alias=True, exclude_none=True), "hand-edit": "not json"}
    body = {"metadata": {"name": ledger.LEGACY_LEDGER_NAME}, "data": data}
    client.CoreV1Api().create_namespaced_config_map(namespace, body)
    health = free_port()
    with operator_process(cluster, health, free_port()):
        wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz"), 60, "operator liveness")
        uid = create_task(namespace, agenttask("legacy"))["metadata"]["uid"]
        status = wait_phase(namespace, "legacy", "Failed")
        assert (
            condition(status, "Succeeded")["reason"] == "AlreadyRan"
            and "uid earlier" in status["conditions"][0]["message"]
        )
        assert _jobs_of(namespace, uid) == []
        core = client.CoreV1Api()
        names = {c.metadata.name for c in core.list_namespaced_config_map(namespace).items}
        assert ledger.LEGACY_LEDGER_NAME not in names and run_record_name("legacy") in names
        _run(namespace, "fresh")


def test_a_status_an_older_operator_wrote_does_not_stop_the_reconcile(running: None, namespace: str) -> None:
    """A claim whose policy has a field this version dropped: read (the field ignored), not refused for ever."""
    create_task(namespace, agenttask("upgraded", poolRef={"name": "gone"}, timeoutSeconds=3600))
    policy = {"mcpServers": [], "tools": {"allow": [], "deny": []}, "retiredLimit": 3}
    claim = {"pool": "gone", "policy": policy, "podName": "mcpexec-pool-gone-x", "podUID": "no-such-pod"}
    # As an older operator would have written it, before this one saw the task.
    client.CustomObjectsApi().patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, "upgraded", {"status": {"claim": claim}}
    )
    status = wait_phase(namespace, "upgraded", "Failed")
    assert status["claim"]["policy"]["retiredLimit"] == 3, "kept as it was written"
    assert "sandbox pod was deleted" in condition(status, "Succeeded")["message"], "its claimed pod is gone"
