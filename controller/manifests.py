"""The Kubernetes objects of one AgentTask, as plain manifests (pure functions, no API calls).

Everything a sandbox needs is here and hardened by default: no API token, non-root, read-only root,
no capabilities, seccomp, gVisor, egress only to the gateway and DNS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from controller.naming import (
    child_name,
    idle_pod_labels,
    pool_child_name,
    pool_labels,
    session_child_name,
    session_labels,
    task_labels,
)
from controller.settings import OperatorSettings
from mcpexec.api.agenttask import AgentTaskSpec, runtime_task_config
from mcpexec.api.meta import API_VERSION, SKILLS_OWNER_LABEL
from mcpexec.api.sandbox import SCRATCH_SKILLS_SIZE, SandboxTemplate, SkillsSpec
from runtime import contract

Manifest = dict[str, Any]


@dataclass(frozen=True)
class _Owner:
    """The identity of the resource that owns the objects made for it (garbage-collected with it)."""

    name: str
    namespace: str
    uid: str
    kind: ClassVar[str]

    def owner_reference(self) -> Manifest:
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def children(self) -> tuple[str, dict[str, str]]:
        """The shared name and the labels of its children."""
        raise NotImplementedError

    def metadata(self) -> Manifest:
        name, labels = self.children()
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": [self.owner_reference()],
        }


@dataclass(frozen=True)
class TaskRef(_Owner):
    """An AgentTask: its ServiceAccount, ConfigMap, NetworkPolicy and Job. `traceparent`: the span its sandbox's
    spans go under (tracing on)."""

    kind = "AgentTask"
    traceparent: str | None = None

    def children(self) -> tuple[str, dict[str, str]]:
        return child_name(self.name), task_labels(self.name)


class PoolRef(_Owner):
    """A SandboxPool: its idle sandboxes, ServiceAccount and NetworkPolicy."""

    kind = "SandboxPool"

    def children(self) -> tuple[str, dict[str, str]]:
        return pool_child_name(self.name), pool_labels(self.name)


def service_account(owner: TaskRef | PoolRef) -> Manifest:
    """A task's (or a pool's sandboxes') identity towards the gateway; it never gets an API token mounted."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": owner.metadata(),
        "automountServiceAccountToken": False,
    }


def task_config(task: TaskRef, spec: AgentTaskSpec) -> Manifest:
    """What the runtime reads at start (docs/contracts.md: task.json)."""
    config = runtime_task_config(task.namespace, task.name, task.uid, spec, traceparent=task.traceparent)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": task.metadata(),
        "data": {"task.json": json.dumps(config, sort_keys=True)},
    }


def network_policy(owner: _Owner, settings: OperatorSettings) -> Manifest:
    """No ingress at all; egress only to the gateway's pods (its API and egress proxy ports) and to cluster DNS
    (settings.dns_peers). A pool's selects
    its sandboxes, idle or claimed; a task's its Job's pod, or the pool sandbox it claimed; a session's its sandbox."""
    selected = owner.children()[1]
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": owner.metadata(),
        "spec": {
            "podSelector": {"matchLabels": selected},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": settings.gateway_namespace}
                            },
                            "podSelector": {"matchLabels": dict(settings.gateway_pod_labels)},
                        }
                    ],
                    "ports": [
                        {"protocol": "TCP", "port": port} for port in (settings.gateway_port, settings.egress_port)
                    ],
                },
                {"to": [peer.model_dump(exclude_none=True) for peer in settings.dns_peers], "ports": dns_ports},
            ],
        },
    }


def skills_claim(namespace: str, skills: SkillsSpec) -> Manifest:
    """The skills PVC: deliberately without an owner, so skills outlive every task that used them."""
    spec: Manifest = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": skills.size}},
    }
    if skills.storage_class_name:
        spec["storageClassName"] = skills.storage_class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": skills.claim_name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "mcpexec", SKILLS_OWNER_LABEL: skills.owner},
        },
        "spec": spec,
    }


def _resources(template: SandboxTemplate) -> Manifest:
    return {
        part: {k: v for k, v in getattr(template.resources, part).model_dump().items() if v is not None}
        for part in ("requests", "limits")
    }


def _volumes(template: SandboxTemplate, settings: OperatorSettings) -> list[Manifest]:
    skills: Manifest
    if template.skills is None:
        skills = {"name": "skills", "emptyDir": {"sizeLimit": SCRATCH_SKILLS_SIZE}}
    else:
        skills = {
            "name": "skills",
            "persistentVolumeClaim": {"claimName": template.skills.claim_name, "readOnly": template.skills.read_only},
        }
    return [
        {"name": "workspace", "emptyDir": {"sizeLimit": settings.workspace_size}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        skills,
        {
            "name": "gateway-token",
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "audience": settings.gateway_audience,
                            "expirationSeconds": settings.token_expiration_seconds,
                            "path": contract.TOKEN_NAME,
                        }
                    }
                ]
            },
        },
    ]


def _started(marker: str) -> Manifest:
    """Ready once the runtime has written `marker` (python3 is the image's only program): a pool counts and claims
    a sandbox whose runtime waits for a task, not one still importing. Probed while it starts (at most 5 minutes),
    never after; -I -S keep each probe's interpreter start small, and it may take seconds under gVisor on a busy node
    (a probe timed out counts as failed, and delays readiness by a period)."""
    check = f"import os, sys; sys.exit(not os.path.exists({marker!r}))"
    return {
        "exec": {"command": ["python3", "-I", "-S", "-c", check]},
        "periodSeconds": 2,
        "timeoutSeconds": 10,
        "failureThreshold": 150,
    }


def _sandbox_pod_spec(
    template: SandboxTemplate, service_account: str, settings: OperatorSettings, task_config: str | None
) -> Manifest:
    """A sandbox's pod: gVisor, non-root, read-only root, no capabilities, no API token, egress by NetworkPolicy.
    With `task_config` (a ConfigMap's name) it runs that task; without, it waits for the gateway to assign one."""
    security_context = {
        "runAsNonRoot": True,
        "runAsUser": contract.SANDBOX_UID,
        "runAsGroup": contract.SANDBOX_UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    skills_read_only = template.skills is not None and template.skills.read_only
    environment = contract.sandbox_environment(
        gateway_url=settings.gateway_url,
        result_file=contract.TERMINATION_LOG,
        tmpdir=contract.CLUSTER_TMP,
        token_file=contract.TOKEN_FILE,
        egress_proxy=settings.egress_proxy_url,
    )
    mounts = [
        {"name": "workspace", "mountPath": contract.WORKSPACE},
        {"name": "tmp", "mountPath": contract.CLUSTER_TMP},
        {"name": "skills", "mountPath": contract.SKILLS, "readOnly": skills_read_only},
        {"name": "gateway-token", "mountPath": contract.TOKEN_DIR, "readOnly": True},
    ]
    volumes = _volumes(template, settings)
    probe: Manifest = {}
    if task_config is None:
        environment[contract.AWAIT_ASSIGNMENT_ENV] = "1"
        environment[contract.READY_FILE_ENV] = contract.READY_FILE
        probe = {"startupProbe": _started(contract.READY_FILE)}
    else:
        mounts.append({"name": "task", "mountPath": contract.TASK_DIR, "readOnly": True})
        volumes.append({"name": "task", "configMap": {"name": task_config}})
    container = {
        "name": "runtime",
        "image": settings.runtime_image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["python3", "-m", "runtime"],
        "env": [{"name": name, "value": value} for name, value in environment.items()],
        "resources": _resources(template),
        "securityContext": security_context,
        "terminationMessagePath": contract.TERMINATION_LOG,
        "terminationMessagePolicy": "File",
        "volumeMounts": mounts,
        **probe,
    }
    return {
        "serviceAccountName": service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "runtimeClassName": template.runtime_class_name,
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": contract.SANDBOX_UID,
            "runAsGroup": contract.SANDBOX_UID,
            "fsGroup": contract.SANDBOX_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "imagePullSecrets": [{"name": name} for name in settings.image_pull_secrets],
        "containers": [container],
        "volumes": volumes,
    }


def job(task: TaskRef, spec: AgentTaskSpec, settings: OperatorSettings) -> Manifest:
    """The sandboxed Job: one pod, no retries (tool calls may have side effects), a hard deadline."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": task.metadata(),
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": spec.timeout_seconds,
            "template": {
                "metadata": {"labels": task_labels(task.name)},
                "spec": _sandbox_pod_spec(spec, child_name(task.name), settings, child_name(task.name)),
            },
        },
    }


def idle_sandbox(pool: PoolRef, template: SandboxTemplate, template_hash: str, settings: OperatorSettings) -> Manifest:
    """One of a pool's warm sandboxes: a task pod that has no task yet (it asks the gateway for one)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{pool_child_name(pool.name)}-",
            "namespace": pool.namespace,
            "labels": idle_pod_labels(pool.name, template_hash),
            "ownerReferences": [pool.owner_reference()],
        },
        "spec": _sandbox_pod_spec(template, pool_child_name(pool.name), settings, task_config=None),
    }


class SessionRef(_Owner):
    """An AgentSession: the pool sandbox it claimed, and that sandbox's NetworkPolicy."""

    kind = "AgentSession"

    def children(self) -> tuple[str, dict[str, str]]:
        return session_child_name(self.name), session_labels(self.name)


# Who may claim a pool's sandbox: a pooled task, or a session.
Claimant = TaskRef | SessionRef
