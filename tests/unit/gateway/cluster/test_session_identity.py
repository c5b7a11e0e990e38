"""An AgentSession's identity at the gateway (pure functions; the real TokenReview, SubjectAccessReview, watch, runtime
and MCP client are tests/cluster/test_gateway_sessions.py's): the sandbox it claimed served as the session, bounded by
its claim's policy; an ended or re-created session serves nothing; the broker's key; the front door's paths."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cluster.auth import PoolSandbox, claimed_session_context
from gateway.cluster.claims import claim_of
from gateway.cluster.people.front_door import target_of
from gateway.cluster.people.sessions import session_scope
from gateway.errors import Forbidden, NoSession, SandboxNotClaimed, Unauthenticated
from mcpexec.api.agentsession import SESSION_CODE

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
POD = PoolSandbox("team-a", "fast", "mcpexec-pool-fast-abcde", "pod-uid-1")
CLAIM = {
    "pool": "fast",
    "podName": POD.pod_name,
    "podUID": POD.pod_uid,
    "policy": {"mcpServers": ["crm", "mail"], "tools": {"allow": ["crm/*"]}},
}


def _session(phase: str | None = "Ready", claim: dict[str, Any] | None = CLAIM, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if claim is not None:
        status |= {"claim": claim, "podName": claim.get("podName")}
    return {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "AgentSession",
        "metadata": {"name": "alice", "namespace": "team-a", "uid": "session-uid"},
        "spec": {"poolRef": {"name": "fast"}, **spec},
        "status": status,
    }


def test_the_sessions_trace_is_the_one_its_status_names_when_valid() -> None:
    """The operator's claim span (status.traceparent) is what the sandbox's executions continue (its assignment)."""
    traced = _session()
    traced["status"]["traceparent"] = TRACEPARENT
    assert claimed_session_context(traced, POD, "session-uid", valid_until=1e12).traceparent == TRACEPARENT
    traced["status"]["traceparent"] = TRACEPARENT.rsplit("-", 1)[0]  # malformed: no trace rather than a wrong one
    assert claimed_session_context(traced, POD, "session-uid", valid_until=1e12).traceparent is None
    assert claimed_session_context(_session(), POD, "session-uid", valid_until=1e12).traceparent is None


def test_a_claimed_sandbox_is_served_as_its_session_within_the_pools_policy() -> None:
    ctx = claimed_session_context(_session(), POD, "session-uid", valid_until=1e12)
    assert ctx.session and ctx.scope == "team-a/alice/session-uid"
    assert ctx.task.spec.code == SESSION_CODE and ctx.task.spec.mcp_servers == ["crm", "mail"]
    assert ctx.ceiling is not None and ctx.ceiling.tools.allow == ["crm/*"]
    narrower = claimed_session_context(_session(mcpServers=["crm"]), POD, "session-uid", valid_until=1e12)
    assert narrower.task.spec.mcp_servers == ["crm"]
    with pytest.raises(Forbidden, match="'files'"):
        claimed_session_context(_session(mcpServers=["files"]), POD, "session-uid", valid_until=1e12)


@pytest.mark.parametrize(
    ("document", "uid", "pod", "error"),
    [
        (_session(phase="Ended"), "session-uid", POD, Unauthenticated),
        (_session(phase="Pending", claim=None), "session-uid", POD, SandboxNotClaimed),
        (_session(), "old-uid", POD, Unauthenticated),
        (_session(), "session-uid", POD._replace(pod_uid="other"), SandboxNotClaimed),
        (_session(), "session-uid", POD._replace(namespace="team-b"), SandboxNotClaimed),
    ],
    ids=["ended", "not-claimed", "re-created", "another-pod", "another-namespace"],
)
def test_a_sandbox_serves_no_session_that_is_not_its_own_and_live(
    document: dict[str, Any], uid: str, pod: PoolSandbox, error: type[Exception]
) -> None:
    with pytest.raises(error):
        claimed_session_context(document, pod, uid, valid_until=1e12)


def test_an_ended_sessions_claim_leaves_the_index() -> None:
    assert claim_of(_session()) is not None
    assert claim_of(_session(phase="Ended")) is None


def test_only_a_ready_session_has_a_broker_key() -> None:
    assert session_scope(_session()) == "team-a/alice/session-uid"
    for document in (_session(phase="Pending", claim=None), _session(phase="Ended")):
        with pytest.raises(NoSession):
            session_scope(document)


def test_the_front_doors_paths() -> None:
    assert target_of("/mcp/team-a/fast") == ("team-a", "fast")
    for path in ("/mcp/team-a", "/mcp/team-a/fast/x", "/mcp/Team/fast", "/v1/mcp/a/b", "/mcp//fast"):
        assert target_of(path) is None
