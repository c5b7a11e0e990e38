"""Cluster-mode auth logic: from a TokenReview answer to the caller's AgentTask (pure functions, no apiserver;
the real TokenReview round trip is covered by the cluster tests)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cluster.auth import service_account_from_review, task_context, task_of_service_account
from gateway.cluster.servers import servers_from_resources
from gateway.errors import Unauthenticated

AUD = "mcpexec-gateway"


def _review(**overrides: Any) -> dict[str, Any]:
    status = {
        "authenticated": True,
        "audiences": [AUD],
        "user": {"username": "system:serviceaccount:team-a:mcpexec-report", "uid": "sa-uid"},
    }
    return status | overrides


def _sa(labels: dict[str, str] | None = None, owners: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "mcpexec-report",
            "namespace": "team-a",
            "labels": {"mcpexec.dev/task": "report"} if labels is None else labels,
            "ownerReferences": [{"kind": "AgentTask", "name": "report", "uid": "task-uid"}]
            if owners is None
            else owners,
        }
    }


def _task(uid: str = "task-uid", phase: str | None = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "AgentTask",
        "metadata": {"name": "report", "namespace": "team-a", "uid": uid, "resourceVersion": "7"},
        "spec": {"code": "print(1)", "mcpServers": ["crm"]},
        "status": {"phase": phase} if phase else {},
    }


def test_a_valid_review_maps_to_the_task() -> None:
    account = service_account_from_review(_review(), AUD)
    assert account == ("team-a", "mcpexec-report")
    name, uid = task_of_service_account(_sa())
    ctx = task_context(_task(), uid, valid_until=1e12)
    assert (ctx.task_id, ctx.uid, ctx.scope) == ("team-a/report", "task-uid", "team-a/report/task-uid")
    assert ctx.task.spec.mcp_servers == ["crm"] and name == "report"


@pytest.mark.parametrize(
    ("traceparent", "continued"),
    [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", False),
        (["not", "a", "string"], False),
    ],
)
def test_the_tasks_trace_is_the_one_its_status_names_when_valid(traceparent: Any, continued: bool) -> None:
    document = _task()
    document["status"]["traceparent"] = traceparent
    ctx = task_context(document, "task-uid", valid_until=1e12)
    assert ctx.traceparent == (traceparent if continued else None)
    assert task_context(_task(), "task-uid", valid_until=1e12).traceparent is None


@pytest.mark.parametrize(
    "status",
    [
        _review(authenticated=False),
        _review(audiences=["https://kubernetes.default.svc"]),
        _review(audiences=None),
        _review(user={"username": "alice@example.com"}),
        _review(user={"username": "system:serviceaccount:team-a"}),
    ],
)
def test_reviews_that_do_not_vouch_for_a_gateway_sa_are_refused(status: dict[str, Any]) -> None:
    with pytest.raises(Unauthenticated):
        service_account_from_review(status, AUD)


@pytest.mark.parametrize(
    "account",
    [
        _sa(labels={}),
        _sa(owners=[]),
        _sa(owners=[{"kind": "AgentTask", "name": "other", "uid": "x"}]),
        _sa(owners=[{"kind": "Deployment", "name": "report", "uid": "x"}]),
    ],
)
def test_service_accounts_not_owned_by_their_task_are_refused(account: dict[str, Any]) -> None:
    with pytest.raises(Unauthenticated):
        task_of_service_account(account)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "TimedOut"])
def test_finished_tasks_are_refused(phase: str) -> None:
    with pytest.raises(Unauthenticated, match="finished"):
        task_context(_task(phase=phase), "task-uid", valid_until=1e12)


def test_a_recreated_task_does_not_accept_the_old_token() -> None:
    with pytest.raises(Unauthenticated, match="re-created"):
        task_context(_task(uid="new-uid"), "task-uid", valid_until=1e12)


def test_mcpserver_resources_are_keyed_by_namespace_and_invalid_ones_skipped() -> None:
    good = {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "crm", "namespace": "team-a"},
        "spec": {"transport": "streamableHttp", "url": "http://crm.team-a:8080/mcp"},
    }
    bad = {**good, "metadata": {"name": "broken", "namespace": "team-a"}, "spec": {"transport": "stdio"}}
    servers = servers_from_resources([good, bad], frozenset())
    assert list(servers) == ["team-a/crm"]
    assert servers["team-a/crm"].spec.url == "http://crm.team-a:8080/mcp"


def test_stdio_servers_only_from_trusted_namespaces() -> None:
    """A stdio MCPServer runs its command inside the gateway: only trusted namespaces may define one."""

    def stdio(namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "mcpexec.dev/v1alpha1",
            "kind": "MCPServer",
            "metadata": {"name": "tools", "namespace": namespace},
            "spec": {"transport": "stdio", "command": ["mcp-server-time"]},
        }

    assert servers_from_resources([stdio("team-a"), stdio("platform")], frozenset()) == {}
    assert list(servers_from_resources([stdio("team-a"), stdio("platform")], frozenset({"platform"}))) == [
        "platform/tools"
    ]
