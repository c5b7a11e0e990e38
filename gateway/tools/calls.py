"""`call`: policy, de-tokenized and schema-checked arguments, the task's own upstream connection, tokenized result."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import mcp_types as types
from jsonschema.protocols import Validator
from pydantic import BaseModel, ConfigDict, Field

from gateway.approvals.gate import ApprovalGate
from gateway.context import TaskContext
from gateway.errors import GatewayError, InvalidArguments, ServerUnavailable
from gateway.pii.tokenizer import PiiTokenizer
from gateway.telemetry import audit
from gateway.telemetry.metrics import UNKNOWN_LABEL, GatewayMetrics
from gateway.tools.arguments_check import ArgumentsCheck
from gateway.tools.catalog import Catalog
from gateway.upstreams.pool import UpstreamPool
from gateway.usage import UsageMeter
from mcpexec import tracing


class CallRequest(BaseModel):
    """`callId`: the caller's own id for this call, 8 to 64 of `A-Z a-z 0-9 - _`: a call held for approval is waited
    for, and sent again once approved, under it; `planId`: the plan (`approval: plan`) this call is made in: recorded
    by its dry run, then allowed only as the approved plan holds it (docs/approvals.md)."""

    model_config = ConfigDict(populate_by_name=True)

    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = Field(default=None, alias="callId", pattern=r"^[A-Za-z0-9_-]{8,64}$")
    plan_id: str | None = Field(default=None, alias="planId", pattern=r"^[A-Za-z0-9_-]{8,64}$")


class CallResult(BaseModel):
    """The MCP CallToolResult, PII tokenized."""

    model_config = ConfigDict(populate_by_name=True)

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = Field(default=None, alias="structuredContent")
    is_error: bool = Field(alias="isError")


def _shown_path(real: Any, shown: Any, path: Iterable[Any]) -> str:
    """The JSON path of `path` (a place in the de-tokenized arguments) as the caller wrote it: keys are taken from
    its own arguments, so a key that carried a token names the token, never the value the vault put there."""
    where = "$"
    for step in path:
        if isinstance(real, dict) and isinstance(shown, dict) and step in real:
            key = list(shown)[list(real).index(step)]
            real, shown = real[step], shown[key]
            where += f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]"
        elif isinstance(real, list) and isinstance(shown, list) and isinstance(step, int):
            real, shown = real[step], shown[step]
            where += f"[{step}]"
        else:
            break
    return where


def _schema_errors(validator: Validator, real: dict[str, Any], shown: dict[str, Any]) -> list[str]:
    """Where and which rule failed, never the offending value (it may be a real, de-tokenized one): places are named
    from the caller's own arguments, rules from the server's schema."""
    problems = []
    for error in sorted(validator.iter_errors(real), key=lambda e: [str(p) for p in e.absolute_path])[:5]:
        rule = repr(error.validator_value)
        problems.append(f"{_shown_path(real, shown, error.absolute_path)}: fails {error.validator!r} ({rule[:200]})")
    return problems


class ToolCaller:
    def __init__(
        self,
        catalog: Catalog,
        upstreams: UpstreamPool,
        tokenizer: PiiTokenizer,
        usage: UsageMeter,
        metrics: GatewayMetrics,
        approvals: ApprovalGate,
    ) -> None:
        self._catalog = catalog
        self._approvals = approvals
        self._upstreams = upstreams
        self._tokenizer = tokenizer
        self._usage = usage
        self._metrics = metrics
        self._checks: dict[tuple[str, str], tuple[dict[str, Any], ArgumentsCheck]] = {}

    def _check(self, server: str, tool: str, schema: dict[str, Any]) -> ArgumentsCheck:
        """The tool's check, built again only when its schema is another object (the catalog's tool list changed)."""
        cached = self._checks.get((server, tool))
        if cached is None or cached[0] is not schema:
            cached = (schema, ArgumentsCheck(schema))
            self._checks[(server, tool)] = cached
        return cached[1]

    async def call(self, ctx: TaskContext, server: str, tool: str, request: CallRequest) -> CallResult:
        started = time.perf_counter()
        outcome = "ok"
        # Metric labels name only tools the catalog knows: names from the URL would make a series each.
        labels = (UNKNOWN_LABEL, UNKNOWN_LABEL)
        try:
            # Errors up to here (no such tool, not allowed) hold only what the sandbox sent: nothing to scan.
            with tracing.span("gateway.policy", {"mcpexec.tool": f"{server}/{tool}"}):
                definition = await self._catalog.tool(ctx, server, tool)
            labels = (server, tool)
            try:
                result = await self._call(ctx, server, tool, definition, request)
            except GatewayError as exc:  # from here on a message may hold what the vault put into the arguments
                exc.message = await self._tokenizer.tokenize(ctx, exc.message)
                raise
            outcome = "tool_error" if result.is_error else "ok"
            return result
        except GatewayError as exc:
            outcome = exc.code
            raise
        finally:
            elapsed = time.perf_counter() - started
            self._metrics.count_call(*labels, outcome, elapsed)
            audit.record(ctx, "call", f"{server}/{tool}", elapsed, outcome)

    async def _call(
        self, ctx: TaskContext, server: str, tool: str, definition: types.Tool, request: CallRequest
    ) -> CallResult:
        arguments = request.arguments
        real = await self._tokenizer.detokenize(ctx, arguments)
        check = self._check(server, tool, definition.input_schema)
        problems = [] if check.surely_valid(real) else _schema_errors(check.validator, real, arguments)
        if problems:
            raise InvalidArguments(f"arguments do not match {server}/{tool}'s inputSchema: " + "; ".join(problems))
        spec = self._catalog.spec(ctx, server)
        approved = None
        if spec is not None and self._approvals.asks(ctx, server, definition, spec):
            approved = await self._approvals.admit(ctx, server, tool, real, arguments, request.call_id, request.plan_id)
        connection = self._upstreams.connection(ctx.scope, self._catalog.server_key(ctx, server))
        self._usage.of(ctx.scope).tool_calls += 1
        try:
            with tracing.span("gateway.upstream_call", {"mcpexec.server": server, "mcpexec.tool": tool}):
                result = await connection.call_tool(
                    tool, real, wait=0 if connection.failing else self._upstreams.connect_wait
                )
        except ServerUnavailable:
            if approved is not None:  # never sent: the approval stands for the caller's next try
                await self._approvals.untake(ctx, approved, request.call_id)
            raise
        dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        answer = {"content": dumped.get("content", []), "isError": bool(dumped.get("isError"))}
        if "structuredContent" in dumped:
            answer["structuredContent"] = dumped["structuredContent"]
        return CallResult.model_validate(await self._tokenizer.tokenize(ctx, answer))
