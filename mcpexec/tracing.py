"""OpenTelemetry tracing for the operator and the gateway, off unless an OTLP endpoint is configured.

On with the standard environment: `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and
`OTEL_SERVICE_NAME` (else the component's own name); the chart sets them from `tracing.otlpEndpoint`. Spans go to
an OTLP/HTTP exporter through a BatchSpanProcessor, flushed by `shutdown()`. Off (nothing set): no tracer provider
is made and `span()` hands back one shared no-op span: a traced block costs a function call, not a span.

Traces cross processes as W3C `traceparent` strings (runtime/contract.py: the format the sandbox's runtime shares).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from runtime.contract import TRACEPARENT_PATTERN

ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_OFF: AbstractContextManager[Span] = contextlib.nullcontext(trace.INVALID_SPAN)


class _State:
    provider: TracerProvider | None = None
    processor: BatchSpanProcessor | None = None
    tracer: trace.Tracer | None = None


def configured() -> bool:
    """Whether the environment asks for traces."""
    disabled = os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    return not disabled and any(os.environ.get(name) for name in ENDPOINT_ENVS)


def configure(service: str) -> bool:
    """Make the tracer provider if the environment asks for one (once; `service` unless OTEL_SERVICE_NAME says
    otherwise). Returns whether tracing is on."""
    if _State.tracer is not None:
        return True
    if not configured():
        return False
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or service})
    provider = TracerProvider(resource=resource)
    processor = BatchSpanProcessor(OTLPSpanExporter())
    provider.add_span_processor(processor)
    _State.provider, _State.processor = provider, processor
    _State.tracer = provider.get_tracer("mcpexec")
    return True


def enabled() -> bool:
    return _State.tracer is not None


def flush() -> None:
    """Export what is queued now (the process's exit does it too: the provider shuts down at exit)."""
    if _State.provider is not None:
        _State.provider.force_flush()


def shutdown() -> None:
    """Flush what is queued and stop exporting (tracing is off again)."""
    provider = _State.provider
    _State.provider, _State.processor, _State.tracer = None, None, None
    if provider is not None:
        provider.shutdown()


def span(
    name: str,
    attributes: Mapping[str, AttributeValue] | None = None,
    parent: str | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> AbstractContextManager[Span]:
    """A span around a block, the current one's child (or `parent`'s, a traceparent, when given and valid); made
    current for the block. Off: the shared no-op span."""
    tracer = _State.tracer
    if tracer is None:
        return _OFF
    context = None if parent is None else parent_context(parent)
    started = tracer.start_as_current_span(
        name, context, kind, attributes, record_exception=False, set_status_on_exception=False
    )
    return _recorded(started)


@contextlib.contextmanager
def _recorded(started: AbstractContextManager[Span]) -> Iterator[Span]:
    """An exception ends the span as an error named by its type only: its message may hold anything (a value the
    vault put into a tool's arguments, a task's spec), and no span carries that."""
    with started as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def task_attributes(metadata: Mapping[str, Any]) -> dict[str, str]:
    """Which task a span is about: its namespace, name and uid (never its spec)."""
    return {f"mcpexec.task.{key}": str(metadata[key]) for key in ("namespace", "name", "uid")}


@contextlib.contextmanager
def continued(traceparent: str | None) -> Iterator[None]:
    """Make `traceparent` (from a request's header) the current context for the block, when tracing is on and it
    is valid."""
    context = parent_context(traceparent) if traceparent and _State.tracer is not None else None
    if context is None:
        yield
        return
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def parse(traceparent: str) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a valid W3C traceparent (version 00, ids not all zeros)."""
    match = TRACEPARENT_PATTERN.match(traceparent)
    if match is None:
        return None
    trace_id, span_id, flags = (int(group, 16) for group in match.groups())
    return (trace_id, span_id, flags) if trace_id and span_id else None


def parent_context(traceparent: str) -> otel_context.Context | None:
    parsed = parse(traceparent)
    if parsed is None:
        return None
    trace_id, span_id, flags = parsed
    remote = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return trace.set_span_in_context(NonRecordingSpan(remote))


def traceparent_of(span: Span) -> str | None:
    """`span`'s W3C traceparent (None: the no-op span)."""
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id a W3C traceparent names (status.traceId)."""
    return None if traceparent is None else traceparent.split("-")[1]


def current_traceparent() -> str | None:
    return traceparent_of(trace.get_current_span()) if _State.tracer is not None else None


def export(spans: Iterable[ReadableSpan]) -> None:
    """Hand finished spans made elsewhere (the sandbox's, checked by the gateway) to this process's exporter."""
    processor = _State.processor
    if processor is not None:
        for finished in spans:
            processor.on_end(finished)
