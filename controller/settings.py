"""Operator configuration, read from MCPEXEC_* environment variables (the Helm chart sets them)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcpexec.api.egress import Egress
from mcpexec.api.meta import GATEWAY_AUDIENCE, QUANTITY
from mcpexec.api.sandbox import DEFAULT_WORKSPACE_SIZE

KUBE_DNS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}


class PolicyPeer(BaseModel):
    """A NetworkPolicyPeer (camelCase, as in the API): where a task's DNS queries may go."""

    model_config = ConfigDict(extra="forbid")

    namespaceSelector: dict[str, Any] | None = None
    podSelector: dict[str, Any] | None = None
    ipBlock: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> PolicyPeer:
        if self.namespaceSelector is None and self.podSelector is None and self.ipBlock is None:
            raise ValueError("a DNS peer needs namespaceSelector, podSelector or ipBlock")
        return self


class GeneratedSecret(BaseModel):
    """A credential the chart names but does not hold (no existingSecret, no value): the operator creates the Secret
    once, in its own namespace (gateway_namespace, the release's), with `bytes` random bytes (URL-safe base64)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    key: Annotated[str, StringConstraints(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)]
    bytes: int = Field(default=24, ge=16, le=128)


class OperatorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCPEXEC_", extra="ignore")

    runtime_image: str = "mcpexec/runtime:0.1.0"
    image_pull_policy: str = "IfNotPresent"
    image_pull_secrets: list[Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=list)
    gateway_url: str = "http://mcpexec-gateway.mcpexec-system.svc:8000"
    gateway_namespace: str = "mcpexec-system"
    gateway_pod_labels: dict[str, str] = Field(default_factory=lambda: {"app.kubernetes.io/name": "mcpexec-gateway"})
    gateway_port: int = 8000
    # The gateway's egress proxy (gateway/egress/): every sandbox is told where it is and may reach its port; only a
    # task granted egress uses it, and the gateway checks the grant on every connection.
    egress_proxy_url: str = "http://mcpexec-gateway.mcpexec-system.svc:3128"
    egress_port: int = 3128
    gateway_audience: str = GATEWAY_AUDIENCE
    # Cluster DNS for the tasks' NetworkPolicy (OpenShift, NodeLocal DNSCache... differ from kube-dns).
    dns_peers: list[PolicyPeer] = Field(default_factory=lambda: [PolicyPeer.model_validate(KUBE_DNS)], min_length=1)
    token_expiration_seconds: int = Field(default=3600, ge=600)
    metrics_port: int = 9090
    # Every task's /workspace (an emptyDir): the kubelet evicts a pod that writes more, and the task fails saying so.
    workspace_size: Annotated[str, StringConstraints(pattern=QUANTITY)] = DEFAULT_WORKSPACE_SIZE
    sweep_interval_seconds: float = Field(default=10, gt=0)
    # A sandbox that reported its result is ended by its kubelet this long after, unless it exited (reports.py).
    report_grace_seconds: float = Field(default=30, gt=0)
    # How long a task name's run record is kept (controller/ledger.py): within it a re-created task of that name is
    # not run again; past it the name may run again. 0 keeps records for ever.
    run_record_retention_days: int = Field(default=30, ge=0)
    run_record_sweep_interval_seconds: float = Field(default=3600, gt=0)
    # Several replicas elect one active operator on a Lease (controller/leader.py) in this namespace (default: the
    # release's, gateway_namespace); one replica runs without.
    leader_election: bool = False
    leader_election_namespace: str = ""
    generated_secrets: list[GeneratedSecret] = Field(default_factory=list)
    # The cluster admin's egress ceiling and namespace grants (JSON, the chart's `egress` values): a task asking
    # for more is refused before it runs (PolicyWidened); the gateway reads the same and enforces it again.
    egress: Egress = Field(default_factory=Egress)
