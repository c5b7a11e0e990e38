"""The MCPServer resource: how the gateway reaches one MCP server."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from mcpexec.api.approval import ServerApproval
from mcpexec.api.meta import Dns1123Label, Resource, SpecModel
from mcpexec.api.pii import PiiDeclaration


class SecretKeyRef(SpecModel):
    name: Dns1123Label
    key: Annotated[str, Field(min_length=1, max_length=253)]


class HeaderFromSecret(SpecModel):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    secret_key_ref: SecretKeyRef = Field(alias="secretKeyRef")


class MCPServerSpec(SpecModel):
    """How the gateway reaches one MCP server: a stdio command it runs, or a streamable-HTTP URL."""

    transport: Literal["stdio", "streamableHttp"]
    description: Annotated[str, Field(max_length=1000)] = ""
    command: list[Annotated[str, Field(min_length=1)]] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: Annotated[str, Field(pattern=r"^https?://", max_length=2000)] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_secrets: list[HeaderFromSecret] = Field(default_factory=list, alias="headersFromSecrets")
    call_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = Field(default=60, alias="callTimeoutSeconds")
    # The owner's word on what this server's results carry: every task that lists the server gets these tokenized.
    pii: PiiDeclaration = Field(default_factory=PiiDeclaration)
    # Tools (glob patterns over the tool's name) no task may call, whatever its policy: e.g. a substring search over
    # personal data, an oracle that rebuilds a tokenized value one character at a time (docs/security.md).
    denied_tools: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(
        default_factory=list, alias="deniedTools", max_length=64
    )
    # Tools (globs over the tool's name) whose every call a person must approve, whatever a task asks for.
    approval: ServerApproval = Field(default_factory=ServerApproval)

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs spec.command")
        if self.transport == "streamableHttp" and not self.url:
            raise ValueError("a streamableHttp MCP server needs spec.url")
        if self.transport == "stdio" and (self.url or self.headers or self.headers_from_secrets):
            raise ValueError("spec.url and headers only apply to streamableHttp servers")
        return self


class MCPServer(Resource):
    kind: Literal["MCPServer"]
    spec: MCPServerSpec
