"""The API server itself rejects malformed AgentTasks and MCPServers, with a message a person can act on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import API_VERSION, GROUP, MCPSERVER_PLURAL, VERSION
from tests.cluster.kube import create_task
from tests.support.control_plane import ControlPlane
from tests.support.malformed import MALFORMED_TASKS, agenttask


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
    assert (spec["timeoutSeconds"], spec["maxTurns"]) == (600, 10)
    # Not defaulted by the API server (a pooled task must not name one): the model's default is gvisor.
    assert "runtimeClassName" not in spec


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
