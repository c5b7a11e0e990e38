"""What the gateway's spans say about a task, and the sandbox's own spans, checked before the gateway exports them.

A sandbox has no egress but the gateway, so its runtime posts its finished spans here (runtime/trace.py). The
sandbox is hostile: a post is bounded (TRACE_SPANS_PER_POST spans, MAX_ATTRIBUTES attributes each, and the request
body limit), each span is put in its task's trace whatever it said, under its task's span when it names no parent;
only the attributes below are kept, and only with values of their expected shape (names, ids, counts: nothing a
task could smuggle a value through); the resource is the gateway's statement of which task it was, never the
sandbox's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from gateway.context import TaskContext
from mcpexec import tracing
from runtime.contract import TRACE_SPANS_PER_POST

SANDBOX_SERVICE = "mcpexec-sandbox"
MAX_ATTRIBUTES = 16
_SPAN_ID = r"^[0-9a-f]{16}$"
_TOOL = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_EXECUTION = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
_CODE = re.compile(r"^[a-z_]{1,64}$")
_MODEL = re.compile(r"^[A-Za-z0-9_.:/-]{1,100}$")
# The attributes a sandbox's span may carry: a string's pattern, or int for a count.
ALLOWED_ATTRIBUTES: dict[str, re.Pattern[str] | type[int]] = {
    "mcpexec.tool": _TOOL,
    "mcpexec.outcome": _CODE,
    "mcpexec.execution_id": _EXECUTION,
    "mcpexec.mode": re.compile(r"^(code|prompt|session)$"),
    "mcpexec.llm.model": _MODEL,
    "mcpexec.llm.turn": int,
    "mcpexec.llm.tokens_in": int,
    "mcpexec.llm.tokens_out": int,
}
_MAX_COUNT = 10**12
# Span times in nanoseconds since the epoch: a later one is taken as this (2262, what the exporter's int64 holds). Cut,
# not refused: no bound above 2**53 reads exactly to a JSON Schema validator (a double), so a schema bound would let
# through a time that pydantic then refused.
_NANOS_MAX = 2**63 - 1
Nanos = Annotated[int, Field(ge=0), AfterValidator(lambda nanos: min(nanos, _NANOS_MAX))]
SpanName = Literal["runtime.task", "runtime.tool_call", "runtime.llm_call", "runtime.session_execution"]


class SandboxSpan(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: SpanName
    span_id: str = Field(alias="spanId", pattern=_SPAN_ID)
    parent_span_id: str | None = Field(default=None, alias="parentSpanId", pattern=_SPAN_ID)
    start: Nanos = Field(alias="startTimeUnixNano")
    end: Nanos = Field(alias="endTimeUnixNano")
    error: bool = False
    attributes: dict[str, Any] = Field(default_factory=dict, max_length=MAX_ATTRIBUTES)


class SandboxSpans(BaseModel):
    """`POST /v1/traces`: a sandbox runtime's finished spans."""

    spans: list[SandboxSpan] = Field(max_length=TRACE_SPANS_PER_POST)


class SpansTaken(BaseModel):
    accepted: int
    dropped: int


def task_attributes(ctx: TaskContext) -> dict[str, str]:
    meta = ctx.task.metadata
    return tracing.task_attributes({"namespace": meta.namespace, "name": meta.name, "uid": ctx.uid})


def allowed_attributes(attributes: dict[str, Any]) -> dict[str, str | int]:
    kept: dict[str, str | int] = {}
    for key, value in attributes.items():
        rule = ALLOWED_ATTRIBUTES.get(key)
        if rule is int:
            if type(value) is int and 0 <= value <= _MAX_COUNT:
                kept[key] = value
        elif isinstance(rule, re.Pattern) and isinstance(value, str) and rule.match(value):
            kept[key] = value
    return kept


def sandbox_spans(ctx: TaskContext, posted: SandboxSpans) -> list[ReadableSpan]:
    """The posted spans as the gateway exports them: in the task's trace (none without one, or one sampled out), under
    the task's span unless they name a parent, with the allowed attributes only, a span ending before it starts
    dropped."""
    task = tracing.parse(ctx.traceparent) if ctx.traceparent else None
    if task is None:
        return []
    trace_id, task_span_id, flags = task
    if not flags & TraceFlags.SAMPLED:  # the task's trace was sampled out (OTEL_TRACES_SAMPLER): so are its spans
        return []
    resource = Resource({SERVICE_NAME: SANDBOX_SERVICE, **task_attributes(ctx)})
    scope = InstrumentationScope("mcpexec.runtime")
    sampled = TraceFlags(TraceFlags.SAMPLED)
    spans = []
    for posted_span in posted.spans:
        span_id = int(posted_span.span_id, 16)
        parent_id = int(posted_span.parent_span_id, 16) if posted_span.parent_span_id else task_span_id
        if not span_id or not parent_id or posted_span.end < posted_span.start:
            continue
        spans.append(
            ReadableSpan(
                posted_span.name,
                context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=sampled),
                parent=SpanContext(trace_id, parent_id, is_remote=True, trace_flags=sampled),
                resource=resource,
                attributes=allowed_attributes(posted_span.attributes),
                kind=SpanKind.CLIENT if posted_span.name != "runtime.task" else SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR) if posted_span.error else Status(StatusCode.UNSET),
                start_time=posted_span.start,
                end_time=posted_span.end,
                instrumentation_scope=scope,
            )
        )
    return spans
