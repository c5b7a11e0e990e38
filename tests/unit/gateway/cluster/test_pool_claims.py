"""A SandboxPool sandbox's identity (pure functions, no apiserver; the real TokenReview, watch and long poll are
covered by tests/cluster/test_gateway_pools.py): the pool's ServiceAccount and the pod a token is bound to, the
index of live claims, and the claimed task with its ceiling."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.cluster.auth import (
    POD_NAME_EXTRA,
    POD_UID_EXTRA,
    PoolSandbox,
    ServiceAccountRef,
    claimed_task_context,
    pool_of_service_account,
    pool_sandbox,
    task_context,
)
from gateway.cluster.claims import ClaimEntry, ClaimIndex, claim_of
from gateway.errors import Forbidden, SandboxNotClaimed, Unauthenticated

POOL = "fast"
POD = PoolSandbox("team-a", POOL, "mcpexec-pool-fast-abcde", "pod-uid-1")
POLICY = {"mcpServers": ["crm", "mail"], "tools": {"allow": ["crm/*"]}, "pii": {"phoneRegions": ["JP"]}}


def _pool_sa(name: str = "mcpexec-pool-fast", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a", "labels": {"mcpexec.dev/pool": POOL} | (labels or {})}}


def _review(extra: dict[str, Any] | None) -> dict[str, Any]:
    user = {"username": "system:serviceaccount:team-a:mcpexec-pool-fast"}
    return {"authenticated": True, "user": user if extra is None else user | {"extra": extra}}


def _extras(name: str = POD.pod_name, uid: str = POD.pod_uid) -> dict[str, list[str]]:
    return {POD_NAME_EXTRA: [name], POD_UID_EXTRA: [uid]}


def _task(
    *,
    name: str = "report",
    namespace: str = "team-a",
    uid: str = "task-uid",
    phase: str | None = "Running",
    claim: dict[str, Any] | None = None,
    servers: list[str] | None = None,
    pool_ref: str | None = POOL,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"code": "print(1)", "mcpServers": ["crm"] if servers is None else servers}
    if pool_ref is not None:
        spec["poolRef"] = {"name": pool_ref}
    status: dict[str, Any] = {"phase": phase} if phase else {}
    if claim is not None:
        status["claim"] = claim
    return {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "AgentTask",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": "7"},
        "spec": spec,
        "status": status,
    }


def _claim(**overrides: Any) -> dict[str, Any]:
    return {"pool": POOL, "podName": POD.pod_name, "podUID": POD.pod_uid, "policy": POLICY} | overrides


def test_a_pools_token_bound_to_its_pod_names_the_sandbox() -> None:
    pool = pool_of_service_account(_pool_sa())
    assert pool == POOL
    assert pool_sandbox(_review(_extras()), ServiceAccountRef("team-a", "mcpexec-pool-fast"), POOL) == POD


@pytest.mark.parametrize(
    "extra",
    [
        None,
        {},
        {POD_NAME_EXTRA: [POD.pod_name]},
        {POD_UID_EXTRA: [POD.pod_uid]},
        _extras(uid=""),
        _extras() | {POD_UID_EXTRA: ["a", "b"]},
    ],
)
def test_a_pools_token_that_names_no_single_pod_is_refused(extra: dict[str, Any] | None) -> None:
    with pytest.raises(Unauthenticated, match="bound to its pod"):
        pool_sandbox(_review(extra), ServiceAccountRef("team-a", "mcpexec-pool-fast"), POOL)


def test_which_service_accounts_are_a_pools() -> None:
    assert pool_of_service_account({"metadata": {"name": "default", "labels": {}}}) is None
    assert pool_of_service_account(_pool_sa(labels={"mcpexec.dev/task": "report"})) is None  # a task's: its rules
    with pytest.raises(Unauthenticated, match="not that pool's"):
        pool_of_service_account(_pool_sa(name="impostor"))


def test_a_claimed_sandbox_serves_its_task_within_the_ceiling() -> None:
    ctx = claimed_task_context(_task(claim=_claim()), POD, "task-uid", valid_until=1e12)
    assert (ctx.task_id, ctx.uid) == ("team-a/report", "task-uid")
    assert ctx.ceiling is not None and ctx.ceiling.mcp_servers == ["crm", "mail"]
    assert ctx.ceiling.tools.allow == ["crm/*"] and ctx.ceiling.pii.phone_regions == ["JP"]


@pytest.mark.parametrize(
    "claim",
    [
        None,
        _claim(podUID="pod-uid-2"),  # another pod (or this pod re-created: a new uid)
        _claim(podName="mcpexec-pool-fast-zzzzz"),
        _claim(pool="other"),
        _claim(podName=None, podUID=None),  # the task ran cold
    ],
)
def test_a_claim_that_does_not_name_this_sandbox_is_refused(claim: dict[str, Any] | None) -> None:
    with pytest.raises(SandboxNotClaimed):
        claimed_task_context(_task(claim=claim), POD, "task-uid", valid_until=1e12)


def test_another_namespaces_task_is_refused() -> None:
    with pytest.raises(SandboxNotClaimed, match="another namespace"):
        claimed_task_context(_task(namespace="team-b", claim=_claim()), POD, "task-uid", valid_until=1e12)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "TimedOut"])
def test_a_finished_claimed_task_is_refused(phase: str) -> None:
    with pytest.raises(Unauthenticated, match="finished"):
        claimed_task_context(_task(phase=phase, claim=_claim()), POD, "task-uid", valid_until=1e12)


def test_a_recreated_claimed_task_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="re-created"):
        claimed_task_context(_task(uid="new-uid", claim=_claim()), POD, "task-uid", valid_until=1e12)


def test_a_task_whose_servers_are_wider_than_its_ceiling_is_refused() -> None:
    with pytest.raises(Forbidden, match="'calendar'"):
        claimed_task_context(_task(servers=["crm", "calendar"], claim=_claim()), POD, "task-uid", valid_until=1e12)


def test_a_pooled_task_in_a_job_of_its_own_still_has_its_ceiling() -> None:
    """A pooled task that ran cold (no idle sandbox) has a claim without a pod: its own token, the pool's bounds."""
    ctx = task_context(_task(claim=_claim(podName=None, podUID=None)), "task-uid", valid_until=1e12)
    assert ctx.ceiling is not None and ctx.ceiling.mcp_servers == ["crm", "mail"]
    assert task_context(_task(pool_ref=None), "task-uid", valid_until=1e12).ceiling is None
    for claim in (None, _claim(pool="other")):  # nothing recorded (yet), or another pool's: no bounds known
        with pytest.raises(SandboxNotClaimed):
            task_context(_task(claim=claim), "task-uid", valid_until=1e12)


def test_claim_of_keeps_live_claims_on_pods_only() -> None:
    entry = ClaimEntry("team-a", "report", "task-uid", POOL, POD.pod_name, POD.pod_uid)
    assert claim_of(_task(claim=_claim())) == entry
    assert claim_of(_task(claim=_claim(), phase=None)) == entry  # not started yet: still its pod
    assert claim_of(_task()) is None
    assert claim_of(_task(claim=_claim(podName=None, podUID=None))) is None
    assert claim_of(_task(claim={"pool": POOL})) is None  # malformed: serves nothing
    for phase in ("Succeeded", "Failed", "TimedOut"):
        assert claim_of(_task(claim=_claim(), phase=phase)) is None


def _index() -> ClaimIndex:
    return ClaimIndex(directory=None)  # type: ignore[arg-type]  # the pure part: events in, answers out


def test_the_index_follows_claims_through_events() -> None:
    index = _index()
    index.replace([_task(name="other")], "10")
    assert index.lookup("team-a", POD.pod_uid) is None
    index.apply("MODIFIED", _task(claim=_claim()))
    found = index.lookup("team-a", POD.pod_uid)
    assert found is not None and (found.name, found.task_uid) == ("report", "task-uid")
    assert index.lookup("team-b", POD.pod_uid) is None  # keyed by namespace too
    index.apply("MODIFIED", _task(claim=_claim(), phase="Succeeded"))
    assert index.lookup("team-a", POD.pod_uid) is None
    index.apply("ADDED", _task(claim=_claim()))
    index.apply("DELETED", _task(claim=_claim()))
    assert index.lookup("team-a", POD.pod_uid) is None
    index.apply("ADDED", _task(claim=_claim()))
    index.replace([], "20")  # a relist: only what it holds
    assert index.lookup("team-a", POD.pod_uid) is None


def test_a_pod_claimed_twice_serves_neither_and_another_namespace_does_not_interfere() -> None:
    index = _index()
    index.apply("ADDED", _task(claim=_claim()))
    index.apply("ADDED", _task(namespace="team-b", name="intruder", claim=_claim()))
    found = index.lookup("team-a", POD.pod_uid)
    assert found is not None and found.name == "report"
    index.apply("ADDED", _task(name="second", claim=_claim()))
    assert index.lookup("team-a", POD.pod_uid) is None
    index.apply("DELETED", _task(name="second"))
    assert index.lookup("team-a", POD.pod_uid) is not None


def test_a_waiter_is_woken_by_the_claim_and_times_out_without_one() -> None:
    index = _index()

    async def scenario() -> tuple[ClaimEntry | None, ClaimEntry | None, float]:
        loop = asyncio.get_running_loop()
        nothing = await index.wait("team-a", POD.pod_uid, 0.05)
        loop.call_later(0.1, index.apply, "MODIFIED", _task(claim=_claim()))
        started = loop.time()
        found = await index.wait("team-a", POD.pod_uid, 10)
        return nothing, found, loop.time() - started

    nothing, found, waited = asyncio.run(scenario())
    assert nothing is None
    assert found is not None and found.name == "report"
    assert waited < 1, "woken by the claim, not by its timeout"
