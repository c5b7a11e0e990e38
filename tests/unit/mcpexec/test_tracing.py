"""mcpexec/tracing.py: off without an OTLP endpoint (no provider, one shared no-op span), W3C traceparents parsed
strictly, and a span's exception recorded by its type only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpexec import tracing

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_off_without_an_endpoint_every_span_is_the_one_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in tracing.ENDPOINT_ENVS:
        monkeypatch.delenv(name, raising=False)
    assert tracing.configure("mcpexec-test") is False
    assert not tracing.enabled()
    assert tracing.span("a") is tracing.span("b", {"k": 1}, parent=VALID)
    with tracing.span("a") as span:
        assert span is trace.INVALID_SPAN
        assert tracing.current_traceparent() is None
        assert tracing.traceparent_of(span) is None


def test_otel_sdk_disabled_wins_over_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not tracing.configured()


@pytest.mark.parametrize(
    "value",
    [
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # another version
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero span id
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # upper case
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "",
    ],
)
def test_invalid_traceparents_are_none(value: str) -> None:
    assert tracing.parse(value) is None
    assert tracing.parent_context(value) is None


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on, its spans also kept in memory (the OTLP exporter points at a closed port: nothing listens)."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.2")
    assert tracing.configure("mcpexec-test")
    memory = InMemorySpanExporter()
    provider = tracing._State.provider
    assert provider is not None
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield memory
    tracing.shutdown()


def test_a_span_continues_a_given_parent_and_hands_on_its_own_context(exported: InMemorySpanExporter) -> None:
    with tracing.span("outer", {"mcpexec.task.name": "t"}, parent=VALID) as outer:
        assert tracing.current_traceparent() == tracing.traceparent_of(outer)
        with tracing.span("inner"):
            pass
    inner, outer_span = exported.get_finished_spans()
    assert f"{outer_span.context.trace_id:032x}" == VALID.split("-")[1]
    assert f"{outer_span.parent.span_id:016x}" == VALID.split("-")[2]
    assert inner.parent.span_id == outer_span.context.span_id


def test_an_exception_is_recorded_by_its_type_never_its_message(exported: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span("failing"):
        raise ValueError("jane.doe@example.com")
    (span,) = exported.get_finished_spans()
    assert span.status.description == "ValueError"
    assert not span.events
    assert "jane.doe" not in repr(span.to_json())
