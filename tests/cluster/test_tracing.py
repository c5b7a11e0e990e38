"""The operator's spans, read back from a real Jaeger: a task's launch is a span of its trace, whose id the task's
status keeps and whose traceparent its sandbox is handed (task.json); a creator's `mcpexec.dev/traceparent`
annotation is continued; a phase change is a span of the same trace; an AgentSession's claim is the first span of
its trace, kept in its status as a task's is. The operator runs as it is deployed, its
tracing on only through the standard OTEL_* environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from mcpexec.api.meta import TRACEPARENT_ANNOTATION
from tests.cluster.kube import create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.cluster.operator import get, operator_process
from tests.cluster.test_sessions import session_status, warm_pool
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask
from tests.support.trace_receiver import Jaeger, jaeger, parent_of, service_of, spans_by_name, tags

CREATOR_TRACE, CREATOR_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def receiver(cluster: ControlPlane) -> Iterator[Jaeger]:
    health = free_port()
    environment = {"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with jaeger() as running:
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = running.otlp_endpoint
        with operator_process(cluster, health, free_port(), environment=environment):
            wait_for(lambda: get(f"http://127.0.0.1:{health}/healthz"), 60, "operator liveness")
            yield running


def _phases(trace: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tags(span)["mcpexec.phase"]: span for span in spans_by_name(trace).get("operator.phase", [])}


def _traced(namespace: str, name: str) -> dict[str, Any]:
    return wait_for(lambda: (s := task_status(namespace, name)).get("traceparent") and s, 60, f"{name}'s trace")


def test_a_tasks_launch_is_the_first_span_of_its_trace_kept_in_its_status(receiver: Jaeger, namespace: str) -> None:
    created = create_task(namespace, agenttask("traced"))
    status = _traced(namespace, "traced")
    _version, trace_id, launch_id, _flags = status["traceparent"].split("-")
    assert status["traceId"] == trace_id and status["jobName"] == "mcpexec-traced"
    config = client.CoreV1Api().read_namespaced_config_map("mcpexec-traced", namespace)
    assert json.loads(config.data["task.json"])["traceparent"] == status["traceparent"]  # the sandbox continues it

    trace = receiver.wait_for(trace_id, lambda t: "operator.launch" in spans_by_name(t))
    (launch,) = spans_by_name(trace)["operator.launch"]
    assert launch["spanID"] == launch_id and parent_of(launch) is None
    assert service_of(trace, launch) == "mcpexec-operator"
    uid = created["metadata"]["uid"]
    assert {
        "mcpexec.task.namespace": namespace,
        "mcpexec.task.name": "traced",
        "mcpexec.task.uid": uid,
    }.items() <= tags(launch).items()
    assert "print('hello')" not in json.dumps(trace)  # never the spec's code

    play_kubelet(job_pod(namespace, "mcpexec-traced"), "Running")
    wait_phase(namespace, "traced", "Running")
    trace = receiver.wait_for(trace_id, lambda t: "Running" in _phases(t))  # the Pending span may come first
    assert parent_of(_phases(trace)["Running"]) == launch_id


def test_a_creators_traceparent_annotation_is_continued(receiver: Jaeger, namespace: str) -> None:
    document = agenttask("continued")
    document["metadata"]["annotations"] = {TRACEPARENT_ANNOTATION: f"00-{CREATOR_TRACE}-{CREATOR_SPAN}-01"}
    create_task(namespace, document)
    status = _traced(namespace, "continued")
    assert status["traceId"] == CREATOR_TRACE
    trace = receiver.wait_for(CREATOR_TRACE, lambda t: "operator.launch" in spans_by_name(t))
    (launch,) = spans_by_name(trace)["operator.launch"]
    assert parent_of(launch) == CREATOR_SPAN and status["traceparent"].split("-")[2] == launch["spanID"]


def test_a_sessions_claim_continues_its_creators_trace_kept_in_its_status(receiver: Jaeger, namespace: str) -> None:
    warm_pool(namespace, "interactive", 1)
    document = {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "AgentSession",
        "metadata": {"name": "alice", "annotations": {TRACEPARENT_ANNOTATION: f"00-{CREATOR_TRACE}-{CREATOR_SPAN}-01"}},
        "spec": {"poolRef": {"name": "interactive"}},
    }
    client.CustomObjectsApi().create_namespaced_custom_object(
        "mcpexec.dev", "v1alpha1", namespace, "agentsessions", document
    )
    status = wait_for(lambda: (s := session_status(namespace, "alice")).get("traceparent") and s, 60, "alice's trace")
    assert status["phase"] == "Ready" and status["traceId"] == CREATOR_TRACE
    trace = receiver.wait_for(CREATOR_TRACE, lambda t: "operator.launch" in spans_by_name(t))
    (claim,) = [span for span in spans_by_name(trace)["operator.launch"] if tags(span)["mcpexec.task.name"] == "alice"]
    assert parent_of(claim) == CREATOR_SPAN and status["traceparent"].split("-")[2] == claim["spanID"]
    assert service_of(trace, claim) == "mcpexec-operator"
