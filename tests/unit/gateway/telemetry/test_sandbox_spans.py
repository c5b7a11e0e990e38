"""A hostile sandbox's spans (POST /v1/traces): bounded, put in its task's trace whatever they say, stripped to the
allowed attributes of the allowed shapes, under a resource the gateway states."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.context import TaskContext
from gateway.telemetry.spans import MAX_ATTRIBUTES, SANDBOX_SERVICE, SandboxSpans, sandbox_spans
from runtime.contract import TRACE_SPANS_PER_POST
from tests.support.tasks import make_task

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TASK_SPAN = "00f067aa0ba902b7"
CONTEXT = TaskContext(
    task=make_task("traced", ["crm"]),
    uid="uid-1",
    expires_at=time.time() + 600,
    traceparent=f"00-{TRACE_ID}-{TASK_SPAN}-01",
)


def _span(**fields: Any) -> dict[str, Any]:
    now = time.time_ns()
    return {
        "name": "runtime.tool_call",
        "spanId": "a" * 16,
        "startTimeUnixNano": now,
        "endTimeUnixNano": now + 1000,
        **fields,
    }


def _taken(*spans: dict[str, Any], ctx: TaskContext = CONTEXT) -> list[Any]:
    return sandbox_spans(ctx, SandboxSpans.model_validate({"spans": list(spans)}))


def test_a_span_joins_its_tasks_trace_under_the_tasks_span_whatever_it_claims() -> None:
    (span,) = _taken(_span(traceId="f" * 32, attributes={"mcpexec.tool": "crm/lookup"}))
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert f"{span.parent.span_id:016x}" == TASK_SPAN and span.parent.trace_id == span.context.trace_id
    assert dict(span.attributes) == {"mcpexec.tool": "crm/lookup"}


def test_a_named_parent_is_kept_within_the_trace() -> None:
    (span,) = _taken(_span(parentSpanId="b" * 16))
    assert f"{span.parent.span_id:016x}" == "b" * 16 and f"{span.parent.trace_id:032x}" == TRACE_ID


def test_the_resource_is_the_gateways_statement_of_the_task_never_the_sandboxs() -> None:
    (span,) = _taken(_span(resource={"service.name": "operator", "mcpexec.task.name": "someone-else"}))
    assert dict(span.resource.attributes) == {
        "service.name": SANDBOX_SERVICE,
        "mcpexec.task.namespace": "default",
        "mcpexec.task.name": "traced",
        "mcpexec.task.uid": "uid-1",
    }


def test_attributes_outside_the_allow_list_or_of_the_wrong_shape_are_dropped() -> None:
    attributes = {
        "mcpexec.tool": "crm/lookup",
        "mcpexec.execution_id": "x" * 5000,  # a huge value where an id goes
        "mcpexec.outcome": "jane.doe@example.com",  # a value where a code goes
        "mcpexec.llm.tokens_in": True,  # a bool is no count
        "mcpexec.llm.tokens_out": 12,
        "mcpexec.llm.turn": -1,
        "http.request.body": "secret",
        "service.name": "operator",
    }
    (span,) = _taken(_span(attributes=attributes))
    assert dict(span.attributes) == {"mcpexec.tool": "crm/lookup", "mcpexec.llm.tokens_out": 12}


@pytest.mark.parametrize(
    "post",
    [
        {"spans": [_span()] * (TRACE_SPANS_PER_POST + 1)},  # too many
        {"spans": [_span(attributes={f"k{i}": "v" for i in range(MAX_ATTRIBUTES + 1)})]},  # too many attributes
        {"spans": [_span(name="gateway.vault")]},  # a name the runtime never makes
        {"spans": [_span(spanId="not-hex-at-all!!")]},
        {"spans": [_span(parentSpanId="0" * 15)]},
        {"spans": [_span(startTimeUnixNano=-1)]},
    ],
)
def test_posts_beyond_the_bounds_are_refused_whole(post: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SandboxSpans.model_validate(post)


def test_spans_that_end_before_they_start_or_have_zero_ids_are_dropped() -> None:
    now = time.time_ns()
    kept = _taken(
        _span(startTimeUnixNano=now, endTimeUnixNano=now - 1),
        _span(spanId="0" * 16),
        _span(parentSpanId="0" * 16),
        _span(spanId="c" * 16),
    )
    assert [f"{span.context.span_id:016x}" for span in kept] == ["c" * 16]


def test_a_time_past_what_the_exporter_holds_is_cut_to_it_not_refused() -> None:
    """No schema bound above 2**53 reads exactly to a JSON Schema validator, so a time past int64 is cut, not refused
    (tests/integration/gateway/test_openapi_fuzz.py found the refusal of a schema-valid post)."""
    (span,) = _taken(_span(endTimeUnixNano=2**64 + 5))
    assert span.end_time == 2**63 - 1


def test_a_task_without_a_trace_or_sampled_out_has_none_of_its_sandboxs_spans_taken() -> None:
    untraced = TaskContext(task=CONTEXT.task, uid="uid-1", expires_at=CONTEXT.expires_at)
    assert _taken(_span(), ctx=untraced) == []
    sampled_out = TaskContext(
        task=CONTEXT.task, uid="uid-1", expires_at=CONTEXT.expires_at, traceparent=f"00-{TRACE_ID}-{TASK_SPAN}-00"
    )
    assert _taken(_span(), ctx=sampled_out) == []
