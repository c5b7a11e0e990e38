"""NetworkPolicy is enforced on the node (tests/e2e/netpol.py) for gVisor pods: a sandbox-like pod whose
policy allows egress only to one server (and DNS) reaches that server through its Service name and
nothing else; a pod isolated for ingress takes no connection."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.node import Node
from tests.e2e.node_network import host_ip
from tests.e2e.pods import pod, run_to_completion, wait_phase

pytestmark = pytest.mark.e2e

PROBE = """probe() { if timeout 3 wget -q -O - "$2" >/dev/null 2>&1; then echo "$1=open"; else echo "$1=closed"; fi; }
tcp() { if timeout 3 nc -w 2 "$2" "$3" </dev/null >/dev/null 2>&1; then echo "$1=open"; else echo "$1=closed"; fi; }
sleep 2
"""


def server(name: str) -> dict[str, Any]:
    body = pod(name, f"echo {name} > /tmp/index.html && exec httpd -f -p 8080 -h /tmp")
    body["spec"]["restartPolicy"] = "Always"
    return body


def test_egress_only_to_the_allowed_server_and_no_ingress_to_an_isolated_pod(
    e2e_node: Node, core: client.CoreV1Api, namespace: str
) -> None:
    net = client.NetworkingV1Api()
    net.create_namespaced_network_policy(
        namespace,
        {
            "metadata": {"name": "sandbox"},
            "spec": {
                "podSelector": {"matchLabels": {"role": "sandbox"}},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [
                    {"to": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": 8080}]},
                    {
                        "to": [
                            {
                                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                            }
                        ],
                        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                    },
                ],
            },
        },
    )
    net.create_namespaced_network_policy(
        namespace,
        {
            "metadata": {"name": "isolated"},
            "spec": {"podSelector": {"matchLabels": {"app": "isolated"}}, "policyTypes": ["Ingress"]},
        },
    )
    for name in ("web", "other", "isolated"):
        core.create_namespaced_pod(namespace, server(name))
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    ips = {name: wait_phase(core, namespace, name, {"Running"}).status.pod_ip for name in ("web", "other", "isolated")}
    time.sleep(1)  # the enforcer polls the API every 0.5 s
    checks = (
        f"probe web-service http://web.{namespace}.svc.cluster.local/index.html\n"
        f"probe web-pod http://{ips['web']}:8080/index.html\n"
        f"probe other-pod http://{ips['other']}:8080/index.html\n"
        f"probe isolated-pod http://{ips['isolated']}:8080/index.html\n"
        "tcp api-service 10.96.0.1 443\n"
        f"tcp api-node {host_ip()} {e2e_node.cp.url.rsplit(':', 1)[1]}\n"
    )

    sandbox = pod("sandbox", PROBE + checks)
    sandbox["metadata"]["labels"]["role"] = "sandbox"
    sandbox_log = run_to_completion(core, namespace, sandbox)
    assert sandbox_log.split() == [
        "web-service=open",
        "web-pod=open",
        "other-pod=closed",
        "isolated-pod=closed",
        "api-service=closed",
        "api-node=closed",
    ]

    free_log = run_to_completion(core, namespace, pod("unrestricted", PROBE + checks))
    assert free_log.split() == [
        "web-service=open",
        "web-pod=open",
        "other-pod=open",
        "isolated-pod=closed",
        "api-service=open",
        "api-node=open",
    ]


def test_a_pod_is_denied_until_the_enforcer_knows_it(core: client.CoreV1Api, namespace: str) -> None:
    """Fail closed: the first packets of a pod under a deny-all policy, sent as soon as it starts (maybe
    before the enforcer has seen the pod: then the pod network's catch-all rejects them), do not get out."""
    client.NetworkingV1Api().create_namespaced_network_policy(
        namespace, {"metadata": {"name": "deny"}, "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}
    )
    core.create_namespaced_pod("default", server("target"))
    target = wait_phase(core, "default", "target", {"Running"}).status.pod_ip
    script = PROBE.replace("sleep 2", "") + f"probe at-once http://{target}:8080/index.html"
    assert run_to_completion(core, namespace, pod("eager", script)).split() == ["at-once=closed"]
    core.delete_namespaced_pod("target", "default")
