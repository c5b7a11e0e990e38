"""Malformed AgentTasks, each with the words its rejection must contain (API server and pydantic alike)."""

from __future__ import annotations

from typing import Any

from mcpexec.api.meta import API_VERSION


def agenttask(name: str, **spec: Any) -> dict[str, Any]:
    """An AgentTask document; direct mode unless the spec says otherwise (code=None drops the default)."""
    spec.setdefault("code", "print('hello')")
    if spec["code"] is None:
        del spec["code"]
    return {"apiVersion": API_VERSION, "kind": "AgentTask", "metadata": {"name": name}, "spec": spec}


MALFORMED_TASKS: list[tuple[str, dict[str, Any], str]] = [
    ("both modes", agenttask("x", code="print(1)", prompt="do it"), "exactly one of spec.prompt"),
    ("no mode", {**agenttask("x"), "spec": {"mcpServers": ["crm"]}}, "exactly one of spec.prompt"),
    ("timeout zero", agenttask("x", timeoutSeconds=0), "spec.timeoutSeconds: Invalid value: 0"),
    ("timeout too long", agenttask("x", timeoutSeconds=90_000), "should be less than or equal to 86400"),
    ("server name not DNS-1123", agenttask("x", mcpServers=["CRM_Server"]), "spec.mcpServers[0]"),
    ("cpu not a quantity", agenttask("x", resources={"limits": {"cpu": "lots"}}), "cpu must be a quantity"),
    # Below the kernel's smallest CFS quota (1ms per 100ms): the kubelet would raise it, runsc fails to start.
    ("cpu below 10m", agenttask("x", resources={"limits": {"cpu": "5m"}}), "cpu must be a quantity from 10m to 64"),
    ("memory too small", agenttask("x", resources={"limits": {"memory": "1Ki"}}), "memory must be a quantity"),
    (
        "requests above limits",
        agenttask("x", resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}),
        "requests must not exceed spec.resources.limits",
    ),
    ("PII switched off", agenttask("x", pii={"enabled": False}), "pii.enabled: false is not allowed"),
    ("unknown PII entity", agenttask("x", pii={"entities": ["PASSPORT"]}), 'supported values: "EMAIL"'),
    (
        "custom pattern name",
        agenttask("x", pii={"customPatterns": [{"name": "ticket", "regex": "T-[0-9]+"}]}),
        "spec.pii.customPatterns[0].name",
    ),
    ("phone region not a code", agenttask("x", pii={"phoneRegions": ["de"]}), "spec.pii.phoneRegions[0]"),
    ("max turns zero", agenttask("x", prompt="hi", code=None, maxTurns=0), "spec.maxTurns"),
    ("model in direct mode", agenttask("x", model="gpt-x"), "spec.model only applies to agent mode"),
    ("skills owner", agenttask("x", skills={"owner": "Team A"}), "spec.skills.owner"),
    ("skills size", agenttask("x", skills={"owner": "a", "size": "5Ti"}), "spec.skills.size must be a quantity"),
    ("unknown field", agenttask("x", retries=3), 'unknown field "spec.retries"'),
    ("name too long", {**agenttask("x"), "metadata": {"name": "a" * 49}}, "metadata.name"),
    ("pool name", agenttask("x", poolRef={"name": "Fast Pool"}), "spec.poolRef.name"),
    (
        "pooled task names its own sandbox",
        agenttask("x", poolRef={"name": "fast"}, runtimeClassName="gvisor"),
        "a task with spec.poolRef runs in the pool's sandbox",
    ),
    (
        "pooled task names its own resources",
        agenttask("x", poolRef={"name": "fast"}, resources={"limits": {"cpu": "2"}}),
        "a task with spec.poolRef runs in the pool's sandbox",
    ),
    ("ttl negative", agenttask("x", ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished"),
    # JSON types, as the API server checks them: no string or boolean stands in for a number.
    ("timeout as a string", agenttask("x", timeoutSeconds="60"), "must be of type integer"),
    ("timeout as a boolean", agenttask("x", timeoutSeconds=True), "must be of type integer"),
    ("max turns as a string", agenttask("x", prompt="hi", code=None, maxTurns="5"), "must be of type integer"),
    ("ttl as a string", agenttask("x", ttlSecondsAfterFinished="60"), "must be of type integer"),
    ("readOnly as a string", agenttask("x", skills={"owner": "a", "readOnly": "yes"}), "must be of type boolean"),
]
