"""Egress at admission, against a real API server and the real operator (docs/egress.md): a task or session asking
for more than the cluster's ceiling, its namespace's grant or its pool's template is refused (`PolicyWidened`, the
message naming the bound); a granted task's Job is told where the gateway's proxy is, its task.json carries the
grant, and its NetworkPolicy reaches the proxy's port on the gateway and nothing else new."""

from __future__ import annotations

import json
from collections.abc import Iterator

import kopf.testing
import pytest
from kubernetes import client

from mcpexec.api.meta import SANDBOX_STATE_LABEL
from tests.cluster.conftest import kopf_operator
from tests.cluster.kube import condition, create_task, job_pod, task_status, wait_for, wait_phase
from tests.cluster.test_pools import _warm_pool
from tests.cluster.test_sessions import create_session, wait_session, warm_pool
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

GRANTED = "egress-granted"  # the one namespace the admin grants egress to
ADMIN = {
    "hosts": ["pypi.org", "*.pythonhosted.org", "api.example.com"],
    "ports": [443],
    "namespaces": {GRANTED: {"hosts": ["pypi.org", "*.pythonhosted.org"]}},
}
PROXY = "http://mcpexec-gateway.mcpexec-system.svc:3128"


@pytest.fixture(scope="module")
def operator(cluster: ControlPlane) -> Iterator[kopf.testing.KopfRunner]:
    """The operator with the admin's egress ceiling and grant (chart values `egress`)."""
    with kopf_operator(EGRESS=json.dumps(ADMIN)) as runner:
        yield runner


@pytest.fixture(scope="module")
def granted(cluster: ControlPlane) -> Iterator[str]:
    client.CoreV1Api().create_namespace({"metadata": {"name": GRANTED}})
    yield GRANTED
    client.CoreV1Api().delete_namespace(GRANTED)


def _refused(namespace: str, name: str) -> str:
    status = wait_phase(namespace, name, "Failed")
    accepted = condition(status, "Accepted")
    assert accepted["reason"] == "PolicyWidened", accepted
    assert not status.get("jobName") and "claim" not in status, "nothing was started"
    return str(accepted["message"])


@pytest.mark.parametrize(
    ("name", "hosts", "message"),
    [
        ("beyond-grant", ["api.example.com"], f"'api.example.com' not allowed by namespace {GRANTED}'s egress grant"),
        ("beyond-ceiling", ["evil.example.org"], "'evil.example.org' not allowed by the cluster's egress ceiling"),
        ("wider-pattern", ["*.org"], None),  # refused by the schema: no top-level wildcards
    ],
)
def test_a_task_asking_beyond_its_namespaces_grant_or_the_ceiling_is_refused(
    operator: kopf.testing.KopfRunner, granted: str, name: str, hosts: list[str], message: str | None
) -> None:
    body = agenttask(name, mcpServers=[], egress={"hosts": hosts})
    if message is None:
        with pytest.raises(client.ApiException) as refused:
            create_task(granted, body)
        assert refused.value.status == 422 and "spec.egress.hosts[0]" in str(refused.value.body)
        return
    create_task(granted, body)
    assert f"spec.egress: {message}" in _refused(granted, name)


def test_a_namespace_without_a_grant_gets_no_egress(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    create_task(namespace, agenttask("ungranted", mcpServers=[], egress={"hosts": ["pypi.org"]}))
    assert f"'pypi.org' not allowed by namespace {namespace}'s egress grant" in _refused(namespace, "ungranted")


def test_a_granted_tasks_job_is_told_where_the_proxy_is_and_may_reach_only_it(
    operator: kopf.testing.KopfRunner, granted: str
) -> None:
    egress = {"hosts": ["pypi.org", "files.pythonhosted.org"], "ports": [443]}
    create_task(granted, agenttask("install", mcpServers=[], egress=egress))
    wait_for(lambda: task_status(granted, "install").get("jobName"), what="install accepted")
    core, net = client.CoreV1Api(), client.NetworkingV1Api()
    config = json.loads(core.read_namespaced_config_map("mcpexec-install", granted).data["task.json"])
    assert config["egress"] == egress
    (container,) = job_pod(granted, "mcpexec-install").spec.containers
    assert {e.name: e.value for e in container.env}["MCPEXEC_EGRESS_PROXY"] == PROXY
    policy = net.read_namespaced_network_policy("mcpexec-install", granted)
    gateway_rule, dns_rule = policy.spec.egress
    assert [(p.protocol, p.port) for p in gateway_rule.ports] == [("TCP", 8000), ("TCP", 3128)]
    assert gateway_rule.to[0].pod_selector.match_labels == {"app.kubernetes.io/name": "mcpexec-gateway"}
    assert sorted(p.port for p in dns_rule.ports) == [53, 53], "no rule of its own for the hosts: they go via the proxy"


def test_a_pooled_task_asking_beyond_its_pools_template_is_refused(
    operator: kopf.testing.KopfRunner, granted: str
) -> None:
    pods = _warm_pool(granted, "pypi-only", 1, mcpServers=[], tools={}, egress={"hosts": ["pypi.org"]})
    create_task(granted, agenttask("greedy", poolRef={"name": "pypi-only"}, egress={"hosts": ["*.pythonhosted.org"]}))
    assert "spec.egress: '*.pythonhosted.org' not allowed by the pool's template" in _refused(granted, "greedy")
    idle = client.CoreV1Api().list_namespaced_pod(granted, label_selector=f"{SANDBOX_STATE_LABEL}=idle").items
    assert pods[0].metadata.name in [p.metadata.name for p in idle], "no sandbox was claimed"


def test_a_session_asking_beyond_its_pools_template_is_refused(operator: kopf.testing.KopfRunner, granted: str) -> None:
    warm_pool(granted, "session-pool", 1, egress={"hosts": ["pypi.org"]})
    create_session(granted, "greedy-session", "session-pool", egress={"hosts": ["files.pythonhosted.org"]})
    ended = wait_session(granted, "greedy-session", "Ended", 30)
    assert ended["reason"] == "PolicyWidened" and not ended.get("podName")
    message = json.dumps(ended)
    assert "spec.egress: 'files.pythonhosted.org' not allowed by the pool's template" in message, ended
