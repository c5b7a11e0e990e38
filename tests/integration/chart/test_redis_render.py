"""The bundled Redis as the chart renders it (issue 31): the vault durable by default (an append-only file on a
PersistentVolumeClaim, its fsync stated), writes refused rather than evicted at maxmemory, a memory limit with room
above it (checked), the vault's alerts as a PrometheusRule behind a value, and an external Sentinel-watched Redis by
URL. Real helm, kubernetes-validate for what has a schema."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from gateway.settings import GatewaySettings
from tests.integration.chart.test_render import K8S_VERSION
from tests.support.chart import CHART, helm, render

SENTINEL_URL = "redis+sentinel://:pw@sentinel-0:26379,sentinel-1:26379/vault/0"
EXTERNAL_SENTINEL = ["--set", "redis.enabled=false", "--set-json", f'redis.external.url="{SENTINEL_URL}"']


def _named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _redis(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Redis pod's spec and its container."""
    pod = _named(docs, "Deployment", "rel-mcpexec-redis")["spec"]["template"]["spec"]
    return pod, pod["containers"][0]


def _options(container: dict[str, Any]) -> dict[str, str]:
    args = container["args"]
    return dict(zip(args[::2], args[1::2], strict=True))


def _mib(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    return float(quantity[:-2]) * units[quantity[-2:]]


@pytest.mark.parametrize(
    "values",
    [[], ["--set", "redis.persistence.enabled=false"], ["--set", "redis.alerts.enabled=true"]],
    ids=["defaults", "no persistence", "alerts"],
)
def test_what_the_redis_values_render_validates(values: list[str]) -> None:
    docs = render(*values)
    for doc in docs:
        if doc["kind"] in ("PersistentVolumeClaim", "Deployment", "Service"):
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    done = helm("lint", "--strict", str(CHART), *values)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_bundled_redis_is_durable_and_refuses_writes_when_full() -> None:
    docs = render()
    claim = _named(docs, "PersistentVolumeClaim", "rel-mcpexec-redis-data")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"] and claim["spec"]["resources"]["requests"]["storage"]
    assert "storageClassName" not in claim["spec"]  # the cluster's default
    pod, container = _redis(docs)
    assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "rel-mcpexec-redis-data"}}]
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert pod["securityContext"]["fsGroup"] == 999
    options = _options(container)
    assert options["--appendonly"] == "yes" and options["--appendfsync"] == "everysec"
    assert options["--dir"] == "/data" and options["--save"] == ""  # the AOF only, no RDB snapshots
    assert options["--maxmemory-policy"] == "noeviction"
    maxmemory = float(options["--maxmemory"].removesuffix("mb"))
    limit = _mib(container["resources"]["limits"]["memory"])
    assert limit >= 1.5 * maxmemory, "room above maxmemory for the rewrite's fork and the client buffers"
    assert container["resources"]["requests"]["memory"] == container["resources"]["limits"]["memory"]
    deployment = _named(docs, "Deployment", "rel-mcpexec-redis")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_persistence_and_its_fsync_follow_the_values() -> None:
    docs = render(
        "--set", "redis.persistence.appendfsync=always", "--set", "redis.persistence.storageClassName=fast",
        "--set", "redis.persistence.size=10Gi", "--set", "redis.maxmemoryMiB=1024",
        "--set", "redis.resources.limits.memory=2Gi",
    )  # fmt: skip
    claim = _named(docs, "PersistentVolumeClaim", "rel-mcpexec-redis-data")["spec"]
    assert claim["storageClassName"] == "fast" and claim["resources"]["requests"]["storage"] == "10Gi"
    options = _options(_redis(docs)[1])
    assert options["--appendfsync"] == "always" and options["--maxmemory"] == "1024mb"
    ephemeral = render("--set", "redis.persistence.enabled=false")
    assert not [d for d in ephemeral if d["kind"] == "PersistentVolumeClaim"]
    pod, container = _redis(ephemeral)
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert _options(container)["--appendonly"] == "no" and _options(container)["--maxmemory-policy"] == "noeviction"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["--set", "redis.maxmemoryMiB=400"], "must be at least 1.5 x redis.maxmemoryMiB (400 MiB)"),
        (["--set", "redis.resources.limits.memory=300M"], "must be at least 1.5 x redis.maxmemoryMiB (256 MiB)"),
        (["--set", "redis.persistence.appendfsync=no"], "/redis/persistence/appendfsync"),
        (["--set", "redis.maxmemoryMiB=8"], "/redis/maxmemoryMiB"),
        (["--set", "redis.enabled=false", "--set", "redis.external.url=sentinel://x"], "/redis/external/url"),
    ],
    ids=["limit under 1.5 x maxmemory", "decimal limit too small", "appendfsync no", "tiny maxmemory", "bad scheme"],
)
def test_a_vault_that_could_lose_writes_silently_is_refused(values: list[str], expected: str) -> None:
    done = helm("template", "rel", str(CHART), *values)
    assert done.returncode != 0 and expected in done.stderr, done.stderr
    assert helm("template", "rel", str(CHART), "--set", "redis.resources.limits.memory=1Gi").returncode == 0


def test_the_vault_alerts_watch_what_the_chart_renders() -> None:
    assert not [d for d in render() if d["kind"] == "PrometheusRule"]
    docs = render("--set", "redis.alerts.enabled=true", "--set", "redis.alerts.labels.release=prometheus")
    rule = _named(docs, "PrometheusRule", "rel-mcpexec-pii-vault")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["metadata"]["labels"]["release"] == "prometheus"
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert set(alerts) == {
        "MCPExecPiiVaultLost", "MCPExecPiiVaultUnavailable", "MCPExecRedisRestarted", "MCPExecRedisOOMKilled",
        "MCPExecRedisMemoryNearLimit", "MCPExecRedisVolumeFilling",
    }  # fmt: skip
    assert 'code="vault_lost"' in alerts["MCPExecPiiVaultLost"]["expr"]
    assert 'code="pii_vault_unavailable"' in alerts["MCPExecPiiVaultUnavailable"]["expr"]
    redis_pod = _named(docs, "Deployment", "rel-mcpexec-redis")["metadata"]["name"]
    for name in ("MCPExecRedisRestarted", "MCPExecRedisOOMKilled", "MCPExecRedisMemoryNearLimit"):
        expr = alerts[name]["expr"]
        assert f'pod=~"{redis_pod}-.*"' in expr and 'container="redis"' in expr and 'namespace="mcpexec-system"' in expr
    assert 'reason="OOMKilled"' in alerts["MCPExecRedisOOMKilled"]["expr"]
    assert 'persistentvolumeclaim="rel-mcpexec-redis-data"' in alerts["MCPExecRedisVolumeFilling"]["expr"]
    assert all(rule_["labels"]["severity"] in ("critical", "warning") for rule_ in alerts.values())
    external = render("--set", "redis.alerts.enabled=true", *EXTERNAL_SENTINEL)
    external_rule = _named(external, "PrometheusRule", "rel-mcpexec-pii-vault")
    assert {r["alert"] for g in external_rule["spec"]["groups"] for r in g["rules"]} == {
        "MCPExecPiiVaultLost", "MCPExecPiiVaultUnavailable"
    }  # fmt: skip


def test_an_external_sentinel_url_is_the_one_setting_the_gateway_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render(*EXTERNAL_SENTINEL)
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    gateway = _named(docs, "Deployment", "rel-mcpexec-gateway")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in gateway["env"]}
    assert env["REDIS_URL"]["value"] == SENTINEL_URL
    monkeypatch.setenv("REDIS_URL", env["REDIS_URL"]["value"])
    monkeypatch.setenv("MCPEXEC_SKILLS_SEAL_KEY", "k" * 48)
    assert GatewaySettings().redis_url == SENTINEL_URL  # the vault, the session store and the rate limits all use it
