"""What makes the node usable once it runs: readiness, the `gvisor` RuntimeClass, CoreDNS."""

from __future__ import annotations

import json
import subprocess
import urllib.request

from tests.e2e.node_artifacts import kubectl_binary
from tests.e2e.node_config import COREDNS_IMAGE, NODE_NAME
from tests.e2e.node_network import CLUSTER_DOMAIN, DNS_SERVICE_IP
from tests.support.control_plane import ControlPlane


def api_get(cp: ControlPlane, path: str) -> dict[str, object] | None:
    import ssl

    ctx = ssl.create_default_context(cafile=str(cp.workdir / "certs" / "apiserver.crt"))
    ctx.check_hostname = False
    request = urllib.request.Request(f"{cp.url}{path}", headers={"Authorization": f"Bearer {cp.token}"})
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except OSError:
        return None


def node_ready(cp: ControlPlane) -> bool:
    found = api_get(cp, f"/api/v1/nodes/{NODE_NAME}")
    if not found:
        return False
    conditions = found.get("status", {}).get("conditions", [])  # type: ignore[union-attr]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def create_runtime_class(cp: ControlPlane) -> None:
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc"}
    kubectl_apply(cp, [body])


def kubectl_apply(cp: ControlPlane, objects: list[dict[str, object]]) -> None:
    kubectl = kubectl_binary()
    if kubectl is None:
        raise RuntimeError("kubectl not found: run `make install`")
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cp.kubeconfig), "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
        text=True,
        capture_output=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"kubectl apply failed: {out.stderr.strip()}")


def deployment_available(cp: ControlPlane, namespace: str, name: str) -> bool:
    found = api_get(cp, f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    return bool(found and found.get("status", {}).get("availableReplicas"))  # type: ignore[union-attr]


COREFILE = f""".:53 {{
    errors
    health :8080
    ready :8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . /etc/resolv.conf
    cache 30
}}
"""


def coredns_manifests() -> list[dict[str, object]]:
    """Cluster DNS as a cluster has it: CoreDNS pods (k8s-app=kube-dns) behind the kube-dns Service."""
    ns, labels = "kube-system", {"k8s-app": "kube-dns"}
    meta = {"name": "coredns", "namespace": ns}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "mcpexec-e2e:coredns"},
            "rules": [
                {"apiGroups": [""], "resources": ["services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "mcpexec-e2e:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mcpexec-e2e:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": ns}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "dnsPolicy": "Default",
                        "containers": [
                            {
                                "name": "coredns",
                                "image": COREDNS_IMAGE,
                                "imagePullPolicy": "Never",
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                ],
                                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 1},
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns"}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": ns, "labels": labels},
            "spec": {
                "selector": labels,
                "clusterIP": DNS_SERVICE_IP,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]
