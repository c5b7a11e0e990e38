"""Gateway configuration: environment variables for `python -m gateway`, models for in-process use."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcpexec.api.approval import AnnotationRule
from mcpexec.api.meta import GATEWAY_AUDIENCE
from mcpexec.api.pii import BUILTIN_ENTITIES, DEFAULT_PHONE_REGIONS, MAX_PHONE_REGIONS, PhoneRegion, PiiEntity

DEFAULT_LLM_MAX_TOKENS = 16_384


class LLMUpstream(BaseModel):
    """The model endpoint; only the gateway holds its key. Sandboxes always speak OpenAI chat completions:
    with `api: anthropic` the gateway translates to the Anthropic Messages API (`{base_url}/v1/messages`).
    `max_tokens` is the most completion tokens one request may ask for (the sandbox spends the operator's money;
    more is refused); a request asking none gets the upstream's default (the Messages API's: 4096, or less under
    `max_tokens`)."""

    api: Literal["openai", "anthropic"] = "openai"
    base_url: Annotated[str, Field(pattern=r"^https?://")]
    api_key: SecretStr
    default_model: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] = 120.0
    max_tokens: Annotated[int, Field(ge=1)] = DEFAULT_LLM_MAX_TOKENS


MiB = 1 << 20


class Limits(BaseModel):
    """Per-task request budget (all `/v1` requests, sliding one-second window), PII vault lifetime, and the largest
    request body and tool answer the gateway takes in: every task shares its memory and CPU (a result is
    PII-scanned at about 45 MB/s, 1.5 MB/s on crafted digit runs), so one task's huge upload or file read must not
    stall the others.
    An answer is measured as the server sent it (bounded_stdio, http_answers); 10 MiB is the TypeScript MCP SDK's
    cap on one stdio message."""

    requests_per_second: Annotated[int, Field(ge=1)] = 100
    vault_ttl_seconds: Annotated[int, Field(ge=60)] = 86_400
    max_request_bytes: Annotated[int, Field(ge=1024)] = 16 * MiB
    max_result_bytes: Annotated[int, Field(ge=1024)] = 10 * MiB


class LLMSettings(BaseSettings):
    """The model upstream from the environment (LLM_API, LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, LLM_MAX_TOKENS): the
    gateway's and `mcpexec run`'s."""

    model_config = SettingsConfigDict(extra="ignore")

    llm_api: Literal["openai", "anthropic"] = Field(
        default="openai", validation_alias=AliasChoices("LLM_API", "llm_api")
    )
    llm_base_url: str | None = Field(default=None, validation_alias=AliasChoices("LLM_BASE_URL", "llm_base_url"))
    llm_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("LLM_API_KEY", "llm_api_key"))
    llm_model: str | None = Field(default=None, validation_alias=AliasChoices("LLM_MODEL", "llm_model"))
    llm_max_tokens: int = Field(
        default=DEFAULT_LLM_MAX_TOKENS, ge=1, validation_alias=AliasChoices("LLM_MAX_TOKENS", "llm_max_tokens")
    )

    def llm(self) -> LLMUpstream | None:
        if not self.llm_base_url:
            return None
        return LLMUpstream(
            api=self.llm_api,
            base_url=self.llm_base_url,
            api_key=self.llm_api_key or SecretStr(""),
            default_model=self.llm_model,
            max_tokens=self.llm_max_tokens,
        )


class GatewaySettings(LLMSettings):
    """`python -m gateway` reads these from the environment (names as the Helm chart sets them)."""

    host: str = Field(default="0.0.0.0", validation_alias=AliasChoices("MCPEXEC_GATEWAY_HOST", "host"))
    port: int = Field(default=8000, validation_alias=AliasChoices("MCPEXEC_GATEWAY_PORT", "port"))
    # Health, metrics and API docs: for probes and scrapers only (the chart's NetworkPolicy keeps task pods out).
    ops_port: int = Field(default=9090, validation_alias=AliasChoices("MCPEXEC_GATEWAY_OPS_PORT", "ops_port"))
    # AgentSessions for people (execute API, MCP front door): the chart's NetworkPolicy keeps sandboxes out.
    sessions_port: int = Field(
        default=8080, validation_alias=AliasChoices("MCPEXEC_GATEWAY_SESSIONS_PORT", "sessions_port")
    )
    redis_url: str = Field(validation_alias=AliasChoices("REDIS_URL", "redis_url"))
    audience: str = Field(
        default=GATEWAY_AUDIENCE, validation_alias=AliasChoices("MCPEXEC_GATEWAY_AUDIENCE", "audience")
    )
    servers_refresh_seconds: float = Field(
        default=30.0,
        validation_alias=AliasChoices("MCPEXEC_GATEWAY_SERVERS_REFRESH_SECONDS", "servers_refresh_seconds"),
    )
    # PERSON/LOCATION detection (gateway/pii/presidio_detector.py): off unless the image has mcpexec[presidio].
    pii_ner: Literal["off", "presidio"] = Field(
        default="off", validation_alias=AliasChoices("MCPEXEC_PII_NER", "pii_ner")
    )
    # The cluster admin's floor: every task's data is checked for these, whatever its spec or its servers declare.
    pii_minimum_entities: list[PiiEntity] = Field(
        default_factory=lambda: list(BUILTIN_ENTITIES),
        validation_alias=AliasChoices("MCPEXEC_PII_MINIMUM_ENTITIES", "pii_minimum_entities"),
    )
    # The regions whose national phone formats every task's data is checked for (international ones always are).
    pii_phone_regions: list[PhoneRegion] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS),
        min_length=1,
        max_length=MAX_PHONE_REGIONS,
        validation_alias=AliasChoices("MCPEXEC_PII_PHONE_REGIONS", "pii_phone_regions"),
    )
    requests_per_second: int = Field(
        default=100, ge=1, validation_alias=AliasChoices("MCPEXEC_GATEWAY_REQUESTS_PER_SECOND", "requests_per_second")
    )
    max_request_bytes: int = Field(
        default=Limits().max_request_bytes,
        ge=1024,
        validation_alias=AliasChoices("MCPEXEC_GATEWAY_MAX_REQUEST_BYTES", "max_request_bytes"),
    )
    max_result_bytes: int = Field(
        default=Limits().max_result_bytes,
        ge=1024,
        validation_alias=AliasChoices("MCPEXEC_GATEWAY_MAX_RESULT_BYTES", "max_result_bytes"),
    )
    # Signs the seals of skills (gateway/tools/skill_seals.py): every replica must hold the same one (the chart makes
    # one, kept across upgrades). Without it the gateway does not start: seals would hold on one replica only.
    skills_seal_key: SecretStr = Field(
        validation_alias=AliasChoices("MCPEXEC_SKILLS_SEAL_KEY", "skills_seal_key"), min_length=32
    )
    # A stdio MCPServer is a command the gateway itself runs, next to the model keys and the PII vault:
    # only namespaces trusted like the gateway's own may define one. Default: none (fail closed).
    stdio_server_namespaces: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("MCPEXEC_STDIO_SERVER_NAMESPACES", "stdio_server_namespaces"),
    )

    # The cluster admin's: calls that need a person's approval, by the tools' MCP annotations (docs/approvals.md).
    approval_annotations: list[AnnotationRule] = Field(
        default_factory=list,
        validation_alias=AliasChoices("MCPEXEC_APPROVAL_ANNOTATIONS", "approval_annotations"),
    )

    def limits(self) -> Limits:
        return Limits(
            requests_per_second=self.requests_per_second,
            max_request_bytes=self.max_request_bytes,
            max_result_bytes=self.max_result_bytes,
        )
