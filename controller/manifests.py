"""The Kubernetes objects of one AgentTask, as plain manifests (pure functions, no API calls).

Everything a sandbox needs is here and hardened by default: no API token, non-root, read-only root,
no capabilities, seccomp, gVisor, egress only to the gateway and DNS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from controller.naming import child_name, task_labels
from controller.settings import OperatorSettings
from mcpexec.api.agenttask import SCRATCH_SKILLS_SIZE, AgentTaskSpec, SkillsSpec, runtime_task_config
from mcpexec.api.meta import API_VERSION, SKILLS_OWNER_LABEL
from runtime import contract

Manifest = dict[str, Any]


@dataclass(frozen=True)
class TaskRef:
    """The identity of the AgentTask that owns the objects."""

    name: str
    namespace: str
    uid: str

    def owner_reference(self) -> Manifest:
        return {
            "apiVersion": API_VERSION,
            "kind": "AgentTask",
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def metadata(self) -> Manifest:
        return {
            "name": child_name(self.name),
            "namespace": self.namespace,
            "labels": task_labels(self.name),
            "ownerReferences": [self.owner_reference()],
        }


def service_account(task: TaskRef) -> Manifest:
    """The task's identity towards the gateway; it never gets an API token mounted."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": task.metadata(),
        "automountServiceAccountToken": False,
    }


def task_config(task: TaskRef, spec: AgentTaskSpec) -> Manifest:
    """What the runtime reads at start (docs/contracts.md: task.json)."""
    config = runtime_task_config(task.namespace, task.name, task.uid, spec)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": task.metadata(),
        "data": {"task.json": json.dumps(config, sort_keys=True)},
    }


def network_policy(task: TaskRef, settings: OperatorSettings) -> Manifest:
    """No ingress at all; egress only to the gateway's pods and to cluster DNS (settings.dns_peers)."""
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": task.metadata(),
        "spec": {
            "podSelector": {"matchLabels": task_labels(task.name)},
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
                    "ports": [{"protocol": "TCP", "port": settings.gateway_port}],
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


def _resources(spec: AgentTaskSpec) -> Manifest:
    return {
        part: {k: v for k, v in getattr(spec.resources, part).model_dump().items() if v is not None}
        for part in ("requests", "limits")
    }


def _volumes(task: TaskRef, spec: AgentTaskSpec, settings: OperatorSettings) -> list[Manifest]:
    skills: Manifest
    if spec.skills is None:
        skills = {"name": "skills", "emptyDir": {"sizeLimit": SCRATCH_SKILLS_SIZE}}
    else:
        skills = {
            "name": "skills",
            "persistentVolumeClaim": {"claimName": spec.skills.claim_name, "readOnly": spec.skills.read_only},
        }
    return [
        {"name": "workspace", "emptyDir": {"sizeLimit": settings.workspace_size}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        skills,
        {"name": "task", "configMap": {"name": child_name(task.name)}},
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


def job(task: TaskRef, spec: AgentTaskSpec, settings: OperatorSettings) -> Manifest:
    """The sandboxed Job: one pod, no retries (tool calls may have side effects), a hard deadline."""
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
    skills_read_only = spec.skills is not None and spec.skills.read_only
    environment = contract.sandbox_environment(
        gateway_url=settings.gateway_url,
        result_file=contract.TERMINATION_LOG,
        tmpdir=contract.CLUSTER_TMP,
        token_file=contract.TOKEN_FILE,
    )
    container = {
        "name": "runtime",
        "image": settings.runtime_image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["python3", "-m", "runtime"],
        "env": [{"name": name, "value": value} for name, value in environment.items()],
        "resources": _resources(spec),
        "securityContext": security_context,
        "terminationMessagePath": contract.TERMINATION_LOG,
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {"name": "workspace", "mountPath": contract.WORKSPACE},
            {"name": "tmp", "mountPath": contract.CLUSTER_TMP},
            {"name": "skills", "mountPath": contract.SKILLS, "readOnly": skills_read_only},
            {"name": "task", "mountPath": contract.TASK_DIR, "readOnly": True},
            {"name": "gateway-token", "mountPath": contract.TOKEN_DIR, "readOnly": True},
        ],
    }
    labels = task_labels(task.name)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": task.metadata(),
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": spec.timeout_seconds,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": child_name(task.name),
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "runtimeClassName": spec.runtime_class_name,
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
                    "volumes": _volumes(task, spec, settings),
                },
            },
        },
    }
