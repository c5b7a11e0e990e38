"""`helm install`, `helm upgrade` and `helm uninstall` of the chart against a real kube-apiserver.

The API server admits every object as rendered (schemas, CRDs), with no Pod Security warning in a
namespace that enforces the `restricted` profile; no credential is rendered at random (the operator generates the
unnamed ones: test_chart_rbac.py), and an explicit Redis password given on upgrade restarts Redis and the gateways;
an upgrade to an autoscaled gateway is admitted; uninstalling removes the release and leaves the CRDs (and
so every AgentTask) in place. No kubelet: pods are not started here (that is the e2e tier).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.chart import CHART, helm
from tests.support.control_plane import control_plane

NAMESPACE = "mcpexec-system"
RESTRICTED = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn")}


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[Path]:
    # Its own control plane as the default client while the module runs, and the one before it (the cluster tier's)
    # after: tests that run later, in this module's order, still reach theirs.
    with control_plane(with_controller_manager=False) as cp, cp.as_default_client():
        yield cp.kubeconfig


def _helm(kubeconfig: Path, *args: str) -> str:
    done = helm(*args, "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE)
    assert done.returncode == 0, done.stdout + done.stderr
    # The API server's warnings (e.g. "would violate PodSecurity") reach helm's stderr.
    assert "Warning" not in done.stderr, done.stderr
    return done.stdout


def _redis_password() -> bytes:
    secret = client.CoreV1Api().read_namespaced_secret("mcpexec-redis-auth", NAMESPACE)
    return base64.b64decode(secret.data["password"])


def _checksums(apps: client.AppsV1Api) -> set[str]:
    return {
        apps.read_namespaced_deployment(name, NAMESPACE).spec.template.metadata.annotations["checksum/redis-auth"]
        for name in ("mcpexec-redis", "mcpexec-gateway")
    }


def test_install_upgrade_uninstall(kubeconfig: Path) -> None:
    apps, core = client.AppsV1Api(), client.CoreV1Api()
    core.create_namespace({"metadata": {"name": NAMESPACE, "labels": RESTRICTED}})
    _helm(kubeconfig, "install", "mcpexec", str(CHART), "--set", "runtimeClass.create=true")
    deployments = {d.metadata.name: d for d in apps.list_namespaced_deployment(NAMESPACE).items}
    assert set(deployments) == {"mcpexec-operator", "mcpexec-gateway", "mcpexec-redis"}
    assert {s.metadata.name for s in core.list_namespaced_service(NAMESPACE).items} == {
        "mcpexec-gateway",
        "mcpexec-redis",
    }
    policies = client.NetworkingV1Api().list_namespaced_network_policy(NAMESPACE).items
    assert {p.metadata.name for p in policies} == {"mcpexec-operator", "mcpexec-gateway", "mcpexec-redis"}
    assert client.PolicyV1Api().read_namespaced_pod_disruption_budget("mcpexec-gateway", NAMESPACE)
    assert client.NodeV1Api().read_runtime_class("gvisor").handler == "runsc"
    crds = client.ApiextensionsV1Api().list_custom_resource_definition().items
    assert {c.metadata.name for c in crds} >= {"agenttasks.mcpexec.dev", "mcpservers.mcpexec.dev"}
    assert not [s for s in core.list_namespaced_secret(NAMESPACE).items if "redis" in s.metadata.name]
    (generated,) = _checksums(apps)

    _helm(kubeconfig, "upgrade", "mcpexec", str(CHART), "--reuse-values", "--set", "gateway.replicas=3")
    assert apps.read_namespaced_deployment("mcpexec-gateway", NAMESPACE).spec.replicas == 3
    assert _checksums(apps) == {generated}, "an upgrade that changes no credential restarts nothing for it"
    _helm(kubeconfig, "upgrade", "mcpexec", str(CHART), "--reuse-values", "--set", "redis.auth.value=vault-password")
    assert _redis_password() == b"vault-password"
    (explicit,) = _checksums(apps)
    assert explicit != generated, "Redis and the gateways restart together on a new password"
    service = core.read_namespaced_service("mcpexec-gateway", NAMESPACE)
    assert service.spec.session_affinity == "ClientIP"

    _helm(kubeconfig, "upgrade", "mcpexec", str(CHART), "--reuse-values", "--set", "gateway.autoscaling.enabled=true")
    autoscaler = client.AutoscalingV2Api().read_namespaced_horizontal_pod_autoscaler("mcpexec-gateway", NAMESPACE)
    assert (autoscaler.spec.scale_target_ref.kind, autoscaler.spec.scale_target_ref.name) == (
        "Deployment",
        "mcpexec-gateway",
    )
    assert "STATUS: deployed" in _helm(kubeconfig, "status", "mcpexec")

    _helm(kubeconfig, "uninstall", "mcpexec")
    assert not apps.list_namespaced_deployment(NAMESPACE).items
    for role in ("mcpexec-operator", "mcpexec-gateway"):
        with pytest.raises(ApiException) as gone:
            client.RbacAuthorizationV1Api().read_cluster_role(role)
        assert gone.value.status == 404
    remaining = {c.metadata.name for c in client.ApiextensionsV1Api().list_custom_resource_definition().items}
    assert {"agenttasks.mcpexec.dev", "mcpservers.mcpexec.dev"} <= remaining
