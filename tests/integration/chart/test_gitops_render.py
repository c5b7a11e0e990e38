"""The chart and our manifests as GitOps tools take them: `helm template` renders the same every time (what Argo CD
compares), nothing random stands in for a credential, kubeconform (strict, Kubernetes 1.34 schemas) accepts every
rendered object and every namespaced manifest, and the CRDs survive their Application."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.settings import OperatorSettings
from tests.integration.chart.test_render import VALUE_SETS
from tests.support.chart import CHART, helm, render
from tests.support.components import REPO
from tests.support.kubeconform import kubeconform

CREDENTIALS = {
    "explicit credentials": [
        "--set", "redis.auth.value=vault-password", "--set", f"gateway.skillsSealKey.value={'k' * 40}",
    ],
    "existing secrets": [
        "--set", "redis.auth.existingSecret=vault", "--set", "redis.auth.existingSecretKey=pw",
        "--set", "gateway.skillsSealKey.existingSecret=seal",
    ],
}  # fmt: skip
ALL = VALUE_SETS | CREDENTIALS
# The Prometheus operator's kind: no schema ships for it (tests/integration/chart/test_render.py checks it).
NO_SCHEMA = {"ServiceMonitor"}


def _template(values: list[str]) -> str:
    done = helm("template", "rel", str(CHART), "--namespace", "mcpexec-system", "--include-crds", *values)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("values", list(ALL.values()), ids=list(ALL))
def test_helm_template_renders_the_same_every_time(values: list[str]) -> None:
    assert _template(values) == _template(values)


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _pod(docs: list[dict[str, Any]], deployment: str) -> dict[str, Any]:
    return dict(_by_kind(docs, "Deployment")[deployment]["spec"]["template"])


def _secret_ref(pod: dict[str, Any], variable: str) -> dict[str, str]:
    (container,) = [c for c in pod["spec"]["containers"]]
    (env,) = [e for e in container["env"] if e["name"] == variable]
    return dict(env["valueFrom"]["secretKeyRef"])


def _generated(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    env = {e["name"]: e.get("value") for e in _pod(docs, "rel-mcpexec-operator")["spec"]["containers"][0]["env"]}
    return list(json.loads(env["MCPEXEC_GENERATED_SECRETS"]))


def test_credentials_are_generated_once_by_the_operator_unless_the_values_name_them() -> None:
    docs = render()
    assert not _by_kind(docs, "Secret"), "no credential is rendered, so none is random"
    assert _generated(docs) == [
        {"name": "rel-mcpexec-redis", "key": "password"},
        {"name": "rel-mcpexec-gateway-skills-seal", "key": "key", "bytes": 36},
    ]
    role = _by_kind(docs, "Role")["rel-mcpexec-operator-generated-secrets"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    gateway, redis = _pod(docs, "rel-mcpexec-gateway"), _pod(docs, "rel-mcpexec-redis")
    assert _secret_ref(gateway, "REDIS_PASSWORD") == _secret_ref(redis, "REDIS_PASSWORD") == {
        "name": "rel-mcpexec-redis", "key": "password",
    }  # fmt: skip
    assert _secret_ref(gateway, "MCPEXEC_SKILLS_SEAL_KEY") == {"name": "rel-mcpexec-gateway-skills-seal", "key": "key"}

    explicit = render(*CREDENTIALS["explicit credentials"])
    secrets = _by_kind(explicit, "Secret")
    assert set(secrets) == {"rel-mcpexec-redis-auth", "rel-mcpexec-gateway-skills-seal-auth"}
    assert _secret_ref(_pod(explicit, "rel-mcpexec-redis"), "REDIS_PASSWORD")["name"] == "rel-mcpexec-redis-auth"
    assert _generated(explicit) == [] and not _by_kind(explicit, "Role")

    existing = render(*CREDENTIALS["existing secrets"])
    assert not _by_kind(existing, "Secret")
    assert _secret_ref(_pod(existing, "rel-mcpexec-gateway"), "REDIS_PASSWORD") == {"name": "vault", "key": "pw"}
    assert _secret_ref(_pod(existing, "rel-mcpexec-gateway"), "MCPEXEC_SKILLS_SEAL_KEY") == {
        "name": "seal",
        "key": "key",
    }


def test_the_operator_reads_the_generated_secrets_the_chart_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPEXEC_GENERATED_SECRETS", json.dumps(_generated(render())))
    wanted = {(s.name, s.key, s.bytes) for s in OperatorSettings().generated_secrets}
    assert wanted == {("rel-mcpexec-redis", "password", 24), ("rel-mcpexec-gateway-skills-seal", "key", 36)}


def test_a_new_password_restarts_redis_and_the_gateways_together() -> None:
    def checksums(*values: str) -> tuple[str, str, str]:
        docs = render(*values)
        redis = _pod(docs, "rel-mcpexec-redis")["metadata"]["annotations"]
        gateway = _pod(docs, "rel-mcpexec-gateway")["metadata"]["annotations"]
        return redis["checksum/redis-auth"], gateway["checksum/redis-auth"], gateway["checksum/skills-seal"]

    first, second = checksums("--set", "redis.auth.value=one"), checksums("--set", "redis.auth.value=two")
    assert first[0] == first[1] and second[0] == second[1], "Redis and the gateways restart together"
    assert first[0] != second[0] and first[2] == second[2], "only what changed restarts"
    moved = checksums("--set", "redis.auth.existingSecret=vault")
    assert moved[0] == moved[1] != checksums()[0]


def test_conflicting_credential_values_are_refused() -> None:
    done = helm("template", "rel", str(CHART), "--set", "redis.auth.value=a", "--set", "redis.auth.existingSecret=b")
    assert done.returncode != 0 and "set only one of redis.auth.existingSecret and redis.auth.value" in done.stderr


def test_the_gateways_budget_never_blocks_a_drain_on_an_unready_replica_and_crds_are_kept() -> None:
    docs = render()
    assert _by_kind(docs, "PodDisruptionBudget")["rel-mcpexec-gateway"]["spec"]["unhealthyPodEvictionPolicy"] == (
        "AlwaysAllow"
    )
    for crd in _by_kind(docs, "CustomResourceDefinition").values():
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Delete=false"


@pytest.mark.parametrize("values", list(ALL.values()), ids=list(ALL))
def test_kubeconform_accepts_every_rendered_object(values: list[str], tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(_template(values)) if d and d["kind"] not in NO_SCHEMA]
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    results = kubeconform([rendered], tmp_path / "schemas")
    assert len(results) == len(docs)
    assert [(r.kind, r.name, r.msg) for r in results if r.status != "statusValid"] == []


def _namespaced(path: Path, namespace: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [d | {"metadata": {**d["metadata"], "namespace": namespace}} for d in docs]


def test_kubeconform_accepts_namespaced_manifests_and_still_rejects_what_the_api_server_would(tmp_path: Path) -> None:
    """Our examples as a GitOps repository holds them (with a namespace), an MCPServer, a re-run; and, so this test
    can fail, what the CRDs' schemas refuse (an unknown field, a name over 48 characters is the API server's CEL
    rule, which offline validators do not run: it is not checked here)."""
    docs = [d for path in sorted((REPO / "examples").glob("*.yaml")) for d in _namespaced(path, "team-a")]
    server = {"apiVersion": "mcpexec.dev/v1alpha1", "kind": "MCPServer",
              "metadata": {"name": "crm", "namespace": "team-a"},
              "spec": {"transport": "streamableHttp", "url": "http://crm.team-a:8080/mcp"}}  # fmt: skip
    rerun = json.loads(json.dumps(docs[0]))
    rerun["metadata"]["annotations"] = {"mcpexec.dev/run-again": "2026-05-01"}
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump_all([*docs, server, rerun]))
    results = kubeconform([good], tmp_path / "schemas")
    assert len(results) == len(docs) + 2
    assert [(r.kind, r.name, r.msg) for r in results if r.status != "statusValid"] == []

    bad = json.loads(json.dumps(docs[0]))
    bad["spec"]["timeoutSecond"] = 60
    rejected = tmp_path / "bad.yaml"
    rejected.write_text(yaml.safe_dump(bad))
    (result,) = kubeconform([rejected], tmp_path / "schemas")
    assert result.status == "statusInvalid" and "timeoutSecond" in result.msg
