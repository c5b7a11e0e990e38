"""The operator's Events: sent in the background, the same reason about one object at most once per interval, and
dropped (never queued without bound) when the API server cannot keep up."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from controller import kube
from controller.kube import Cluster


class _Recorder:
    """Stands in for the Event thread pool: what would be sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def submit(self, _send: object, event: dict[str, Any]) -> None:
        self.sent.append(event)


def _task(uid: str) -> dict[str, Any]:
    meta = {"name": f"t-{uid}", "namespace": "n", "uid": uid}
    return {"apiVersion": "mcpexec.dev/v1alpha1", "kind": "AgentTask", "metadata": meta, "spec": {"code": "x" * 9999}}


@pytest.fixture
def cluster() -> tuple[Cluster, _Recorder]:
    cluster = Cluster(client.ApiClient(client.Configuration()))
    recorder = _Recorder()
    cluster._events = recorder  # type: ignore[assignment]
    return cluster, recorder


def test_the_same_reason_about_one_object_is_said_once_per_interval(cluster: tuple[Cluster, _Recorder]) -> None:
    events, recorder = cluster
    for _ in range(3):
        events.record_event(_task("a"), "Refilled", "started 1 idle sandbox(es)")
    events.record_event(_task("a"), "Claimed", "claimed")
    events.record_event(_task("b"), "Refilled", "started 1 idle sandbox(es)")
    assert [(e["involvedObject"]["uid"], e["reason"]) for e in recorder.sent] == [
        ("a", "Refilled"),
        ("a", "Claimed"),
        ("b", "Refilled"),
    ]
    assert "spec" not in recorder.sent[0] and recorder.sent[0]["type"] == "Normal", "only the reference is kept"


def test_events_beyond_the_backlog_are_dropped(cluster: tuple[Cluster, _Recorder]) -> None:
    events, recorder = cluster
    for i in range(kube.EVENT_BACKLOG + 5):
        events.record_event(_task(str(i)), "Pending", "task is Pending")
    assert len(recorder.sent) == kube.EVENT_BACKLOG, "nothing was sent yet, so the backlog stays full"
