"""A simulated cluster for the scale tier: the real control plane (tests/support/control_plane.py) plus the real
kube-scheduler and kwok (sigs.k8s.io/kwok, tests/support/build-go-tools.sh) faking N nodes, so pods are scheduled
and go Running and Ready (and a Job's pods Succeeded) without kubelets.

kwok's stages are given explicitly (KWOK_STAGES): a pod is Running and Ready as soon as it is bound to a fake node; a
pod a Job owns then completes with exit code 0; a deleted pod goes at once. The nodes are large (1,000 pods each, not a
kubelet's 110: a run leaves thousands of finished pods bound) so scheduling, not capacity, is what a burst meets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from tests.support.components import built_by
from tests.support.control_plane import ControlPlane, binaries_dir, control_plane, spawn

NODE_ANNOTATION = "kwok.x-k8s.io/node"
# A cluster of this size is not run on the controller-manager's defaults (20 requests/s, 5 Job syncs at a time): those
# took 87 s to complete 300 Jobs written directly, the floor under every task's finish.
CONTROLLER_MANAGER_ARGS = ("--kube-api-qps=500", "--kube-api-burst=1000", "--concurrent-job-syncs=50")
PODS_PER_NODE = 1000

# kwok's node-initialize / pod-ready / pod-complete / pod-delete stages, trimmed to what the tier needs (no delays).
KWOK_STAGES = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ["True"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready,
         reason: KubeletReady, message: kubelet is posting ready status}
      addresses:
      - {address: {{ NodeIP | Quote }}, type: InternalIP}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.podIP, operator: DoesNotExist}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: PodScheduled}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running: {startedAt: {{ $now | Quote }}}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-complete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
  next:
    finalizers: {empty: true}
    delete: true
"""


@dataclass(frozen=True)
class KwokCluster:
    control_plane: ControlPlane
    nodes: int
    kwok_pid: int

    @property
    def workdir(self) -> Path:
        return self.control_plane.workdir


def kwok_binary() -> Path:
    """kwok, built once from the Go module proxy and cached (tests/support/build-go-tools.sh)."""
    return built_by("tests/support/build-go-tools.sh", "kwok") / "kwok"


def fake_node(name: str) -> dict[str, object]:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": str(PODS_PER_NODE)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
        },
        "status": {"allocatable": capacity, "capacity": capacity},
    }


def _add_node(core: client.CoreV1Api, name: str) -> None:
    """The API server taints a new node not-ready; with no node-lifecycle controller here, the taint is lifted by
    hand once kwok has made the node Ready (as that controller would)."""
    core.create_node(fake_node(name))
    core.patch_node(name, {"spec": {"taints": None}})


@contextmanager
def kwok_cluster(
    nodes: int = 100, *, users: Mapping[str, Sequence[str]] | None = None, apiserver_args: Sequence[str] = ()
) -> Iterator[KwokCluster]:
    """The control plane (its `users` and `apiserver_args`: tests/support/control_plane.py) with kube-scheduler and
    kwok managing `nodes` fake nodes; all stopped after."""
    kwok = kwok_binary()
    with (
        control_plane(
            users=users, apiserver_args=apiserver_args, controller_manager_args=CONTROLLER_MANAGER_ARGS
        ) as cp,
        ExitStack() as stack,
    ):
        bins = binaries_dir()
        spawn(
            stack,
            [
                str(bins / "kube-scheduler"),
                "--kubeconfig", str(cp.kubeconfig),
                "--leader-elect=false",
                "--secure-port", "0",
                "--kube-api-qps", "500",
                "--kube-api-burst", "1000",
            ],
            cp.workdir / "kube-scheduler.log",
        )  # fmt: skip
        stages = cp.workdir / "kwok-stages.yaml"
        stages.write_text(KWOK_STAGES)
        proc = spawn(
            stack,
            [
                str(kwok),
                "--kubeconfig", str(cp.kubeconfig),
                "--config", str(stages),
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
                "--cidr", "10.0.0.0/8",
                "--node-ip", "10.255.255.254",
                "-v", "WARN",
            ],
            cp.workdir / "kwok.log",
        )  # fmt: skip
        with cp.as_default_client():
            core = client.CoreV1Api()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: _add_node(core, f"kwok-node-{i}"), range(nodes)))
            yield KwokCluster(control_plane=cp, nodes=nodes, kwok_pid=proc.pid)
