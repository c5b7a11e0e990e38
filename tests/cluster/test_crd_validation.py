"""The API server itself rejects malformed AgentTasks, MCPServers and AgentSessions, with a message one can act on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import AGENTSESSION_PLURAL, API_VERSION, GROUP, MCPSERVER_PLURAL, VERSION
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


MALFORMED_SESSIONS: list[tuple[str, dict[str, Any], str]] = [
    ("no pool", {}, "poolRef"),
    ("idle past lifetime", {"idleTimeoutSeconds": 600, "maxLifetimeSeconds": 300}, "must not exceed"),
    ("lifetime over a day", {"maxLifetimeSeconds": 86_401}, "86400"),
    ("unknown field", {"code": "print(1)"}, "code"),
]


@pytest.mark.parametrize(("why", "spec", "expected"), MALFORMED_SESSIONS, ids=[m[0] for m in MALFORMED_SESSIONS])
def test_malformed_agentsession_is_rejected(
    cluster: ControlPlane, namespace: str, why: str, spec: dict[str, Any], expected: str
) -> None:
    base = {} if why == "no pool" else {"poolRef": {"name": "fast"}}
    body = {"apiVersion": API_VERSION, "kind": "AgentSession", "metadata": {"name": "s"}, "spec": {**base, **spec}}
    api = client.CustomObjectsApi()
    message = _reject_message(
        lambda: api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, AGENTSESSION_PLURAL, body, field_validation="Strict"
        )
    )
    assert expected in message, message


def test_an_agentsessions_defaults_are_applied_and_its_spec_is_immutable(cluster: ControlPlane, namespace: str) -> None:
    body = {"apiVersion": API_VERSION, "kind": "AgentSession", "metadata": {"name": "s"},
            "spec": {"poolRef": {"name": "fast"}}}  # fmt: skip
    api = client.CustomObjectsApi()
    created = api.create_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSION_PLURAL, body)
    assert (created["spec"]["idleTimeoutSeconds"], created["spec"]["maxLifetimeSeconds"]) == (900, 3600)
    message = _reject_message(
        lambda: api.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, AGENTSESSION_PLURAL, "s", {"spec": {"idleTimeoutSeconds": 60}}
        )
    )
    assert "immutable" in message
