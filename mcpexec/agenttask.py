"""The AgentTask and MCPServer resources as pydantic models.

One definition serves the operator, the gateway and `mcpexec run`; `crds/*.yaml` is the API server's
copy of the same shape, and a unit test keeps the two in step.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from kubernetes.utils.quantity import parse_quantity
from pydantic import BaseModel, ConfigDict, Field, model_validator

GROUP = "mcpexec.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
AGENTTASK_PLURAL = "agenttasks"
MCPSERVER_PLURAL = "mcpservers"

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
ENTITY_NAME = r"^[A-Z][A-Z0-9_]*$"
# A Kubernetes quantity (the API server's own grammar, simplified to what users write).
QUANTITY = r"^([0-9]+(\.[0-9]+)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"

# The uid sandboxed code runs as, in the Job's pod and in `mcpexec run`'s gVisor sandbox alike.
SANDBOX_UID = 65534

# Children are named `mcpexec-<task>`; 48 keeps them and the Job's pods within DNS-1123 label limits.
MAX_TASK_NAME = 48

Dns1123Label = Annotated[str, Field(pattern=DNS1123_LABEL, min_length=1, max_length=63)]
Quantity = Annotated[str, Field(pattern=QUANTITY, max_length=32)]


class _Model(BaseModel):
    """Spec models reject unknown fields, as the CRD's structural schema does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"

    @property
    def finished(self) -> bool:
        return self in (Phase.SUCCEEDED, Phase.FAILED, Phase.TIMED_OUT)


class PiiEntity(StrEnum):
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CREDIT_CARD = "CREDIT_CARD"
    US_SSN = "US_SSN"
    IBAN = "IBAN"
    IP_ADDRESS = "IP_ADDRESS"
    PERSON = "PERSON"
    LOCATION = "LOCATION"


BUILTIN_ENTITIES: tuple[PiiEntity, ...] = (
    PiiEntity.EMAIL,
    PiiEntity.PHONE,
    PiiEntity.CREDIT_CARD,
    PiiEntity.US_SSN,
    PiiEntity.IBAN,
    PiiEntity.IP_ADDRESS,
)


class ToolPolicy(_Model):
    """Glob patterns over `server/tool`; deny wins over allow; an empty allow list allows all."""

    allow: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)
    deny: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(default_factory=list)


class SkillsSpec(_Model):
    """Persistent skills on a PVC named `skills-<owner>`; it outlives the tasks that use it."""

    owner: Annotated[str, Field(pattern=DNS1123_LABEL, min_length=1, max_length=56)]
    read_only: bool = Field(default=False, alias="readOnly")
    size: Quantity = "1Gi"
    storage_class_name: str | None = Field(default=None, alias="storageClassName")

    @model_validator(mode="after")
    def _size_bounded(self) -> Self:
        _quantity_within(self.size, "0", "1Ti", False, "spec.skills.size")
        return self

    @property
    def claim_name(self) -> str:
        return f"skills-{self.owner}"


class CustomPattern(_Model):
    name: Annotated[str, Field(pattern=ENTITY_NAME, max_length=40)]
    regex: Annotated[str, Field(min_length=1, max_length=1000)]

    @model_validator(mode="after")
    def _compiles(self) -> Self:
        try:
            re.compile(self.regex)
        except re.error as exc:
            raise ValueError(f"customPatterns[{self.name}].regex does not compile: {exc}") from exc
        return self


class PiiSpec(_Model):
    enabled: bool = True
    entities: list[PiiEntity] = Field(default_factory=lambda: list(BUILTIN_ENTITIES))
    custom_patterns: list[CustomPattern] = Field(default_factory=list, alias="customPatterns")


def _quantity_within(value: str, low: str, high: str, low_inclusive: bool, what: str) -> None:
    amount = parse_quantity(value)
    above_low = amount >= parse_quantity(low) if low_inclusive else amount > parse_quantity(low)
    if not (above_low and amount <= parse_quantity(high)):
        raise ValueError(f"{what} must be a quantity {'from' if low_inclusive else 'above'} {low} to {high}")


class ResourceList(_Model):
    """Bounds match the CRD's CEL rules, so `mcpexec run` rejects what `kubectl apply` would."""

    cpu: Quantity | None = None
    memory: Quantity | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        if self.cpu is not None:
            _quantity_within(self.cpu, "0", "64", False, "cpu")
        if self.memory is not None:
            _quantity_within(self.memory, "16Mi", "256Gi", True, "memory")
        return self


class Resources(_Model):
    requests: ResourceList = Field(default_factory=lambda: ResourceList(cpu="100m", memory="256Mi"))
    limits: ResourceList = Field(default_factory=lambda: ResourceList(cpu="1", memory="512Mi"))

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Self:
        for name in ("cpu", "memory"):
            request, limit = getattr(self.requests, name), getattr(self.limits, name)
            if request is not None and limit is not None and parse_quantity(request) > parse_quantity(limit):
                raise ValueError("spec.resources.requests must not exceed spec.resources.limits")
        return self


class AgentTaskSpec(_Model):
    """Exactly one of `prompt` (agent mode) or `code` (direct mode)."""

    prompt: Annotated[str, Field(min_length=1, max_length=100_000)] | None = None
    code: Annotated[str, Field(min_length=1, max_length=200_000)] | None = None
    model: Annotated[str, Field(max_length=200)] | None = None
    max_turns: Annotated[int, Field(ge=1, le=100)] = Field(default=10, alias="maxTurns")
    mcp_servers: list[Dns1123Label] = Field(default_factory=list, alias="mcpServers", max_length=32)
    tools: ToolPolicy = Field(default_factory=ToolPolicy)
    skills: SkillsSpec | None = None
    pii: PiiSpec = Field(default_factory=PiiSpec)
    resources: Resources = Field(default_factory=Resources)
    timeout_seconds: Annotated[int, Field(ge=1, le=86_400)] = Field(default=600, alias="timeoutSeconds")
    ttl_seconds_after_finished: Annotated[int, Field(ge=0, le=2_592_000)] | None = Field(
        default=None, alias="ttlSecondsAfterFinished"
    )
    runtime_class_name: Dns1123Label = Field(default="gvisor", alias="runtimeClassName")

    @model_validator(mode="after")
    def _exactly_one_mode(self) -> Self:
        if (self.prompt is None) == (self.code is None):
            raise ValueError("exactly one of spec.prompt (agent mode) or spec.code (direct mode) must be set")
        if self.model is not None and self.prompt is None:
            raise ValueError("spec.model only applies to agent mode (spec.prompt)")
        return self

    @property
    def mode(self) -> Literal["prompt", "code"]:
        return "prompt" if self.prompt is not None else "code"


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: Dns1123Label
    namespace: Dns1123Label = "default"
    uid: str | None = None


class _Resource(BaseModel):
    """A whole resource document; fields beyond ours (status, managedFields...) are kept, not refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: Literal["mcpexec.dev/v1alpha1"] = Field(alias="apiVersion")
    metadata: ObjectMeta


class AgentTask(_Resource):
    """An AgentTask document, as `kubectl apply` and `mcpexec run` read it."""

    kind: Literal["AgentTask"]
    spec: AgentTaskSpec

    @model_validator(mode="after")
    def _name_fits_children(self) -> Self:
        if len(self.metadata.name) > MAX_TASK_NAME:
            raise ValueError(f"metadata.name must be at most {MAX_TASK_NAME} characters")
        return self

    @property
    def task_id(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class SecretKeyRef(_Model):
    name: Dns1123Label
    key: Annotated[str, Field(min_length=1, max_length=253)]


class HeaderFromSecret(_Model):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    secret_key_ref: SecretKeyRef = Field(alias="secretKeyRef")


class MCPServerSpec(_Model):
    """How the gateway reaches one MCP server: a stdio command it runs, or a streamable-HTTP URL."""

    transport: Literal["stdio", "streamableHttp"]
    description: Annotated[str, Field(max_length=1000)] = ""
    command: list[Annotated[str, Field(min_length=1)]] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: Annotated[str, Field(pattern=r"^https?://", max_length=2000)] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_secrets: list[HeaderFromSecret] = Field(default_factory=list, alias="headersFromSecrets")
    call_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = Field(default=60, alias="callTimeoutSeconds")

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs spec.command")
        if self.transport == "streamableHttp" and not self.url:
            raise ValueError("a streamableHttp MCP server needs spec.url")
        if self.transport == "stdio" and (self.url or self.headers or self.headers_from_secrets):
            raise ValueError("spec.url and headers only apply to streamableHttp servers")
        return self


class MCPServer(_Resource):
    kind: Literal["MCPServer"]
    spec: MCPServerSpec


def parse_agenttask(document: dict[str, Any]) -> AgentTask:
    """Validate one AgentTask document; raises pydantic.ValidationError with field paths."""
    return AgentTask.model_validate(document)


def runtime_task_config(namespace: str, name: str, uid: str, spec: AgentTaskSpec) -> dict[str, Any]:
    """The runtime's task.json (docs/contracts.md), the same from the operator and from `mcpexec run`."""
    config: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "mode": spec.mode,
        "maxTurns": spec.max_turns,
        "timeoutSeconds": spec.timeout_seconds,
    }
    for key, value in (("code", spec.code), ("prompt", spec.prompt), ("model", spec.model)):
        if value is not None:
            config[key] = value
    return config
