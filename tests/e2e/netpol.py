"""A small NetworkPolicy enforcer for the e2e node (iptables; run by tests/e2e/node.py).

Why our own: the usual standalone enforcers cannot be had here (the Go module proxy answers 403 for
sigs.k8s.io/kube-network-policies, kube-router and antrea; Calico and Cilium need their own CNI and
dataplane). This one implements the networking.k8s.io/v1 semantics the project relies on, for the pods
on the node's CNI bridge (br_netfilter makes bridged traffic traverse FORWARD):

- a pod selected by a policy with Ingress (Egress) in its policyTypes is isolated for ingress (egress);
  a connection is allowed only if the source's egress and the destination's ingress both allow it;
- peers: podSelector, namespaceSelector, both, ipBlock (cidr, except); ports: protocol, number, named
  (resolved from the peer's container ports), endPort; empty `from`/`to`/`ports` match everything;
- replies of allowed connections pass (conntrack); denied packets are rejected;
- FORWARD (pod to pod, pod to Service, pod to outside) and INPUT (pod to this node: the API server,
  the kubelet) are filtered, as Calico and Cilium do; the node's own connections to pods (probes) are not;
- fail closed: new packets from an address of the pod network that no known pod has yet (a pod that
  started between two polls) are dropped until the enforcer has seen the pod (DNS and TCP retry).

It polls the API (pods, namespaces, policies) and rewrites its chains when the result changes.
  python -m tests.e2e.netpol --kubeconfig FILE --pod-cidr 10.88.0.0/24
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import signal
import subprocess
import sys
import time
from typing import Any

from kubernetes import client, config

MAIN = "MCPEXEC-NP"
EGRESS_OK, INGRESS_OK = "0x100000", "0x200000"
BOTH = "0x300000"


def matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist)."""
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or selector.get("match_labels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or selector.get("match_expressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and (not present or labels[key] not in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def chain_name(kind: str, key: str) -> str:
    return f"MCPEXEC-NP-{kind}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _port_matches(ports: list[dict[str, Any]] | None, pod: dict[str, Any] | None) -> list[str] | None:
    """iptables matches for a rule's ports (None: no port can match; [""]: any port)."""
    if not ports:
        return [""]
    out = []
    for port in ports:
        proto = (port.get("protocol") or "TCP").lower()
        number = port.get("port")
        if number is None:
            out.append(f"-p {proto}")
            continue
        if isinstance(number, str) and not number.isdigit():
            resolved = [
                p["containerPort"]
                for c in (pod or {}).get("spec", {}).get("containers", [])
                for p in c.get("ports") or []
                if p.get("name") == number and (p.get("protocol") or "TCP").lower() == proto
            ]
            out.extend(f"-p {proto} --dport {n}" for n in resolved)
            continue
        end = port.get("endPort")
        out.append(f"-p {proto} --dport {number}" + (f":{end}" if end else ""))
    return out or None


class State:
    def __init__(self, pods: list[dict[str, Any]], namespaces: list[dict[str, Any]], policies: list[dict[str, Any]]):
        self.pods = pods
        self.ns_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in namespaces}
        self.policies = policies

    def peers(self, policy_ns: str, peer: dict[str, Any]) -> list[dict[str, Any]]:
        """The pods a podSelector / namespaceSelector peer selects."""
        pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
        found = []
        for pod in self.pods:
            ns = pod["metadata"]["namespace"]
            if ns_sel is None and ns != policy_ns:
                continue
            if ns_sel is not None and not matches(ns_sel, self.ns_labels.get(ns, {})):
                continue
            if pod_sel is not None and not matches(pod_sel, pod["metadata"].get("labels") or {}):
                continue
            found.append(pod)
        return found


def _policy_types(policy: dict[str, Any]) -> list[str]:
    spec = policy["spec"]
    return spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec else ["Ingress"])


def _rule(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def render(state: State, pod_cidr: str) -> tuple[list[str], dict[str, list[str]]]:
    """The main chain's rules and every other chain's rules (per isolated pod and direction)."""
    # Unknown sources first: a pod that started since the last poll must be dropped (it retries) before any
    # isolated destination's chain rejects it for not being on its allow list yet.
    sources = chain_name("S", "known sources")
    main = [
        f"-A {MAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
        f"-A {MAIN} -s {pod_cidr} -j {sources}",
        f"-A {MAIN} -j MARK --set-xmark 0x0/{BOTH}",
    ]
    chains: dict[str, list[str]] = {
        sources: [
            *(f"-A {sources} -s {p['status']['podIP']}/32 -j RETURN" for p in state.pods),
            # Dropped, not rejected: the pod's resolver and TCP retry, and by then the enforcer knows the pod.
            f"-A {sources} -j DROP",
        ]
    }
    for direction, field, mark, peer_key in (
        ("Egress", "egress", EGRESS_OK, "to"),
        ("Ingress", "ingress", INGRESS_OK, "from"),
    ):
        this, other = ("-s", "-d") if direction == "Egress" else ("-d", "-s")
        set_mark = f"-j MARK --set-xmark {mark}/{mark}"
        for pod in state.pods:
            ns, ip = pod["metadata"]["namespace"], pod["status"]["podIP"]
            labels = pod["metadata"].get("labels") or {}
            selecting = [
                p
                for p in state.policies
                if p["metadata"]["namespace"] == ns
                and direction in _policy_types(p)
                and matches(p["spec"].get("podSelector") or {}, labels)
            ]
            if not selecting:
                continue
            name = chain_name(direction[0], f"{ns}/{pod['metadata']['name']}/{ip}")
            rules: list[str] = []
            for policy in selecting:
                for rule in policy["spec"].get(field) or []:
                    peers = rule.get(peer_key) or []
                    for peer in peers or [None]:
                        if peer is None:
                            targets: list[tuple[str, dict[str, Any] | None]] = [("", None)]
                        elif "ipBlock" in peer:
                            targets = [(f"{other} {peer['ipBlock']['cidr']}", None)]
                        else:
                            targets = [(f"{other} {p['status']['podIP']}/32", p) for p in state.peers(ns, peer)]
                        excepts = (peer or {}).get("ipBlock", {}).get("except") or []
                        for where, peer_pod in targets:
                            port_pod = peer_pod if direction == "Egress" else pod
                            for port in _port_matches(rule.get("ports"), port_pod) or []:
                                if not excepts:
                                    rules.append(_rule(f"-A {name}", where, port, set_mark))
                                    continue
                                # cidr minus except: a sub-chain returns early for the exceptions.
                                sub = chain_name("B", f"{name}/{where}/{port}")
                                chains[sub] = [
                                    *(_rule(f"-A {sub}", f"{other} {cidr}", "-j RETURN") for cidr in excepts),
                                    _rule(f"-A {sub}", set_mark),
                                ]
                                rules.append(_rule(f"-A {name}", where, port, f"-j {sub}"))
            rules.append(f"-A {name} -m mark ! --mark {mark}/{mark} -j REJECT")
            chains[name] = rules
            main.append(f"-A {MAIN} {this} {ip}/32 -j {name}")
    return main, chains


def snapshot(pod_cidr: ipaddress.IPv4Network) -> State:
    core, net = client.CoreV1Api(), client.NetworkingV1Api()
    api = client.ApiClient()
    pods = [
        p
        for p in (api.sanitize_for_serialization(x) for x in core.list_pod_for_all_namespaces().items)
        if not p["spec"].get("hostNetwork")
        and p.get("status", {}).get("podIP")
        and ipaddress.ip_address(p["status"]["podIP"]) in pod_cidr
        and p["status"].get("phase") in ("Pending", "Running")
    ]
    namespaces = [api.sanitize_for_serialization(n) for n in core.list_namespace().items]
    policies = [api.sanitize_for_serialization(p) for p in net.list_network_policy_for_all_namespaces().items]
    return State(pods, namespaces, policies)


def iptables(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", *args], capture_output=True, text=True)


def apply(main: list[str], chains: dict[str, list[str]], previous: set[str]) -> None:
    lines = ["*filter", f":{MAIN} - [0:0]", *(f":{c} - [0:0]" for c in chains)]
    lines += [*main, *(r for rules in chains.values() for r in rules), "COMMIT", ""]
    out = subprocess.run(["iptables-restore", "--noflush"], input="\n".join(lines), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"iptables-restore failed: {out.stderr.strip()}\n" + "\n".join(lines))
    for stale in previous - set(chains):
        iptables("-F", stale)
        iptables("-X", stale)


JUMPS = (("FORWARD", "-j", MAIN), ("INPUT", "-j", MAIN))


def install_jumps(pod_cidr: str) -> None:
    iptables("-N", MAIN)
    for parent, *rule in JUMPS:
        if iptables("-C", parent, "-s", pod_cidr, *rule).returncode != 0:
            iptables("-I", parent, "1", "-s", pod_cidr, *rule)


def cleanup(chains: set[str], pod_cidr: str) -> None:
    for parent, *rule in JUMPS:
        iptables("-D", parent, "-s", pod_cidr, *rule)
    for name in [MAIN, *chains]:
        iptables("-F", name)
    for name in [MAIN, *chains]:
        iptables("-X", name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--pod-cidr", required=True)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    config.load_kube_config(config_file=args.kubeconfig)
    pod_cidr = ipaddress.ip_network(args.pod_cidr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    install_jumps(str(pod_cidr))
    current: tuple[list[str], dict[str, list[str]]] | None = None
    try:
        while True:
            try:
                wanted = render(snapshot(pod_cidr), str(pod_cidr))
            except Exception as exc:  # the API server restarting, a pod gone mid-list: try again
                print(f"netpol: {exc}", file=sys.stderr, flush=True)
                time.sleep(args.interval)
                continue
            if wanted != current:
                apply(*wanted, previous=set(current[1]) if current else set())
                print(f"netpol: {len(wanted[1])} isolated pod directions", file=sys.stderr, flush=True)
                current = wanted
            time.sleep(args.interval)
    finally:
        cleanup(set(current[1]) if current else set(), str(pod_cidr))


if __name__ == "__main__":
    main()
