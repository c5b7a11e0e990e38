"""The gateway's cluster-mode auth against a real API server: projected-style tokens, TokenReview, task mapping.

Tokens are minted with the TokenRequest API exactly as the kubelet does for the Job's projected volume
(audience = the gateway), for the ServiceAccount the operator created for the task.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf.testing
import pytest
from kubernetes import client, config

from gateway.cluster.auth import ClusterAuthenticator
from gateway.cluster.claims import ClaimIndex
from gateway.cluster.directory import KubeDirectory
from gateway.errors import Unauthenticated
from tests.cluster.kube import create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

AUDIENCE = "mcpexec-gateway"


def _token(namespace: str, service_account: str, audience: str = AUDIENCE) -> str:
    request = {"spec": {"audiences": [audience], "expirationSeconds": 600}}
    answer = client.CoreV1Api().create_namespaced_service_account_token(service_account, namespace, request)
    return str(answer.status.token)


def _authenticator(cluster: ControlPlane) -> ClusterAuthenticator:
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    directory = KubeDirectory(api)
    return ClusterAuthenticator(directory, AUDIENCE, ClaimIndex(directory), cache_seconds=0)


def _refused(auth: ClusterAuthenticator, token: str) -> str:
    with pytest.raises(Unauthenticated) as info:
        asyncio.run(auth.authenticate(token))
    return str(info.value)


def test_task_token_maps_to_its_task_and_nothing_else(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str, api: dict[str, Any]
) -> None:
    uid = create_task(namespace, agenttask("caller", mcpServers=[]))["metadata"]["uid"]
    wait_for(lambda: task_status(namespace, "caller").get("jobName"), what="task accepted")
    auth = _authenticator(cluster)

    context = asyncio.run(auth.authenticate(_token(namespace, "mcpexec-caller")))
    assert context.task.task_id == f"{namespace}/caller"
    assert context.uid == uid

    # The API server itself refuses a token minted for another audience.
    assert "TokenReview" in _refused(auth, _token(namespace, "mcpexec-caller", audience="someone-else"))
    wait_for(lambda: api["core"].read_namespaced_service_account("default", namespace), what="default SA")
    assert "not an mcpexec task" in _refused(auth, _token(namespace, "default"))
    assert "TokenReview" in _refused(auth, "eyJhbGciOiJSUzI1NiJ9.forged.token")

    play_kubelet(job_pod(namespace, "mcpexec-caller"), "Succeeded", exit_code=0, message="done")
    wait_phase(namespace, "caller", "Succeeded")
    assert "finished" in _refused(auth, _token(namespace, "mcpexec-caller"))
