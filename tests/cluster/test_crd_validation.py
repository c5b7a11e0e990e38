"""The API server itself rejects malformed AgentTasks and MCPServers, with a message a person can act on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.agenttask import API_VERSION, GROUP, MCPSERVER_PLURAL, VERSION
from tests.cluster.kube import agenttask, create_task
from tests.support.control_plane import ControlPlane

MALFORMED_TASKS: list[tuple[str, dict[str, Any], str]] = [
    ("both modes", agenttask("x", code="print(1)", prompt="do it"), "exactly one of spec.prompt"),
    ("no mode", {**agenttask("x"), "spec": {"mcpServers": ["crm"]}}, "exactly one of spec.prompt"),
    ("timeout zero", agenttask("x", timeoutSeconds=0), "spec.timeoutSeconds: Invalid value: 0"),
    ("timeout too long", agenttask("x", timeoutSeconds=90_000), "should be less than or equal to 86400"),
    ("server name not DNS-1123", agenttask("x", mcpServers=["CRM_Server"]), "spec.mcpServers[0]"),
    ("cpu not a quantity", agenttask("x", resources={"limits": {"cpu": "lots"}}), "cpu must be a quantity"),
    ("memory too small", agenttask("x", resources={"limits": {"memory": "1Ki"}}), "memory must be a quantity"),
    (
        "requests above limits",
        agenttask("x", resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}),
        "requests must not exceed spec.resources.limits",
    ),
    ("unknown PII entity", agenttask("x", pii={"entities": ["PASSPORT"]}), 'supported values: "EMAIL"'),
    (
        "custom pattern name",
        agenttask("x", pii={"customPatterns": [{"name": "ticket", "regex": "T-[0-9]+"}]}),
        "spec.pii.customPatterns[0].name",
    ),
    ("max turns zero", agenttask("x", prompt="hi", code=None, maxTurns=0), "spec.maxTurns"),
    ("model in direct mode", agenttask("x", model="gpt-x"), "spec.model only applies to agent mode"),
    ("skills owner", agenttask("x", skills={"owner": "Team A"}), "spec.skills.owner"),
    ("skills size", agenttask("x", skills={"owner": "a", "size": "5Ti"}), "spec.skills.size must be a quantity"),
    ("unknown field", agenttask("x", retries=3), 'unknown field "spec.retries"'),
    ("name too long", {**agenttask("x"), "metadata": {"name": "a" * 49}}, "metadata.name"),
    ("ttl negative", agenttask("x", ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished"),
]


def _reject_message(call: Any) -> str:
    with pytest.raises(ApiException) as info:
        call()
    assert info.value.status in (400, 422), info.value.body
    body = json.loads(info.value.body)
    assert body["reason"] in ("BadRequest", "Invalid")
    return str(body["message"])


@pytest.mark.parametrize(("why", "body", "expected"), MALFORMED_TASKS, ids=[m[0] for m in MALFORMED_TASKS])
def test_malformed_agenttask_is_rejected(
    cluster: ControlPlane, namespace: str, why: str, body: dict[str, Any], expected: str
) -> None:
    if body["spec"].get("code") is None:
        body["spec"].pop("code", None)
    message = _reject_message(lambda: create_task(namespace, body))
    assert expected in message, message


def test_spec_is_immutable(cluster: ControlPlane, namespace: str) -> None:
    create_task(namespace, agenttask("once"))
    api = client.CustomObjectsApi()
    message = _reject_message(
        lambda: api.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "agenttasks", "once", {"spec": {"code": "print(2)"}}
        )
    )
    assert "spec is immutable" in message


def test_defaults_are_applied(cluster: ControlPlane, namespace: str) -> None:
    spec = create_task(namespace, agenttask("defaults"))["spec"]
    assert (spec["timeoutSeconds"], spec["maxTurns"], spec["runtimeClassName"]) == (600, 10, "gvisor")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"transport": "stdio"}, "a stdio MCP server needs spec.command"),
        ({"transport": "streamableHttp"}, "a streamableHttp MCP server needs spec.url"),
        ({"transport": "streamableHttp", "url": "ftp://x"}, "spec.url"),
        ({"transport": "stdio", "command": ["x"], "url": "http://x"}, "only apply to streamableHttp"),
        ({"transport": "websocket", "url": "http://x"}, "spec.transport"),
    ],
)
def test_malformed_mcpserver_is_rejected(
    cluster: ControlPlane, namespace: str, spec: dict[str, Any], expected: str
) -> None:
    body = {"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "crm"}, "spec": spec}
    api = client.CustomObjectsApi()
    message = _reject_message(
        lambda: api.create_namespaced_custom_object(GROUP, VERSION, namespace, MCPSERVER_PLURAL, body)
    )
    assert expected in message, message
