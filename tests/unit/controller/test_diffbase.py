"""kopf's diff base keeps no copy of large values, and still sees every change."""

from __future__ import annotations

import json

import kopf

from controller.diffbase import OBJECT_LIMIT, DigestedDiffBaseStorage, digested

KINDS = frozenset({"AgentTask", "SandboxPool"})


def _essence(code: str) -> dict[str, object]:
    storage = DigestedDiffBaseStorage(prefix="mcpexec.dev", changed_kinds=KINDS)
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": code}
    spec = {"code": code, "timeoutSeconds": 600, "tools": {"allow": [f"crm/t{i}" for i in range(200)]}}
    metadata = {"name": "t", "namespace": "n", "labels": {"team": "a"}, "annotations": annotations}
    body = kopf.Body(
        {"apiVersion": "mcpexec.dev/v1alpha1", "kind": "AgentTask", "metadata": metadata, "spec": spec, "status": {}}  # type: ignore[typeddict-item]
    )
    return dict(storage.build(body=body))


def test_a_large_spec_is_stored_as_digests_small_fields_as_they_are() -> None:
    essence = _essence("x" * 140_000)
    assert len(json.dumps(essence)) < 1000
    spec = essence["spec"]
    assert isinstance(spec, dict) and spec["timeoutSeconds"] == 600
    assert str(spec["code"]).startswith("sha256:") and str(spec["tools"]["allow"]).startswith("sha256:")
    assert essence["metadata"] == {"labels": {"team": "a"}}, "kubectl's own copy is never kept"


def test_a_change_of_a_large_value_changes_the_essence() -> None:
    assert _essence("x" * 140_000) != _essence("x" * 139_999 + "y")
    assert _essence("x" * 140_000) == _essence("x" * 140_000)


def test_the_top_levels_stay_objects_and_wide_objects_below_are_digested_whole() -> None:
    wide = {"spec": {"env": {f"K{i}": "v" * 40 for i in range(500)}}}
    compact = digested(wide, keep=3)
    assert isinstance(compact["spec"], dict) and isinstance(compact["spec"]["env"], dict)
    deeper = digested({"spec": {"a": {"env": {f"K{i}": "v" * 40 for i in range(500)}}}}, keep=2)
    assert str(deeper["spec"]["a"]["env"]).startswith("sha256:")
    assert len(json.dumps(deeper)) < OBJECT_LIMIT


def test_the_essence_is_kopfs_own_without_copying_status_or_managed_fields() -> None:
    """The status and managedFields are left out before kopf copies the body; the essence is the same as kopf's."""
    metadata = {"name": "t", "namespace": "n", "labels": {"a": "b"}, "managedFields": [{"manager": "x" * 5000}]}
    raw = {"kind": "SandboxPool", "metadata": metadata, "spec": {"replicas": 2}, "status": {"readyReplicas": 1}}
    ours = DigestedDiffBaseStorage(prefix="mcpexec.dev", changed_kinds=KINDS).build(body=kopf.Body(raw))  # type: ignore[arg-type]
    theirs = kopf.AnnotationsDiffBaseStorage(prefix="mcpexec.dev").build(body=kopf.Body(raw))  # type: ignore[arg-type]
    assert dict(ours) == digested(dict(theirs), keep=3) == {"spec": {"replicas": 2}, "metadata": {"labels": {"a": "b"}}}
    watched = DigestedDiffBaseStorage(prefix="mcpexec.dev", changed_kinds=KINDS).build(
        body=kopf.Body(raw),  # type: ignore[arg-type]
        extra_fields=["status.readyReplicas"],
    )
    assert watched["status"] == {"readyReplicas": 1}, "a watched status field is still in the essence"


def test_kinds_without_change_handlers_have_no_essence_built_or_read() -> None:
    """kopf diffs every event of every kind it watches; for a pod's (event handlers only) nothing reads the diff."""
    storage = DigestedDiffBaseStorage(prefix="mcpexec.dev", changed_kinds=frozenset({"SandboxPool"}))
    stored = {"mcpexec.dev/last-handled-configuration": '{"spec": {"old": 1}}'}  # what kopf would read back
    metadata: dict[str, object] = {"name": "p", "namespace": "n", "annotations": stored}
    pod = kopf.Body({"kind": "Pod", "metadata": metadata, "spec": {"containers": []}})  # type: ignore[typeddict-item]
    assert dict(storage.build(body=pod)) == {} and storage.fetch(body=pod) is None
    pool = kopf.Body({"kind": "SandboxPool", "metadata": metadata, "spec": {"replicas": 1}})  # type: ignore[typeddict-item]
    assert storage.fetch(body=pool) == {"spec": {"old": 1}}, "a pool's changes are still seen"
    assert dict(storage.build(body=pool))["spec"] == {"replicas": 1}
