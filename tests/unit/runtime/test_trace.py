"""runtime/trace.py: no traceparent, nothing recorded and no header; with one, spans nest per thread under the task's
span, an exception marks an error, and they are posted in bounded batches, a failed post dropping them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from runtime import trace
from runtime.contract import TRACE_SPANS_PER_POST

TRACE_ID, TASK_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture(autouse=True)
def untraced() -> Iterator[None]:
    yield
    trace._Trace.trace_id, trace._Trace.unsent = None, []


def _posted(posts: list[bytes]) -> list[dict[str, object]]:
    return [span for post in posts for span in json.loads(post)["spans"]]


def test_without_a_traceparent_nothing_is_recorded_or_sent() -> None:
    trace.start(None)
    trace.start("not a traceparent")
    with trace.span("runtime.tool_call", **{"mcpexec.tool": "crm/lookup"}):
        assert trace.header() is None
    posts: list[bytes] = []
    trace.flush(posts.append)
    assert posts == []


def test_spans_nest_under_the_tasks_span_and_the_header_names_the_current_one() -> None:
    trace.start(f"00-{TRACE_ID}-{TASK_SPAN}-01")
    assert trace.header() == f"00-{TRACE_ID}-{TASK_SPAN}-01"
    calling = trace.span("runtime.tool_call", **{"mcpexec.tool": "crm/lookup"})
    with trace.span("runtime.task"), pytest.raises(RuntimeError), calling as attrs:
        attrs["mcpexec.outcome"] = "tool_error"
        header = trace.header()
        raise RuntimeError("boom")
    posts: list[bytes] = []
    trace.flush(posts.append)
    call, task = _posted(posts)
    assert "parentSpanId" not in task and call["parentSpanId"] == task["spanId"]
    assert header == f"00-{TRACE_ID}-{call['spanId']}-01"
    assert call["error"] is True and "error" not in task
    assert call["attributes"] == {"mcpexec.tool": "crm/lookup", "mcpexec.outcome": "tool_error"}


def test_spans_go_in_bounded_posts_and_a_failed_post_drops_its_own() -> None:
    trace.start(f"00-{TRACE_ID}-{TASK_SPAN}-01")
    for _ in range(TRACE_SPANS_PER_POST + 1):
        with trace.span("runtime.tool_call"):
            pass
    posts: list[bytes] = []

    def post(payload: bytes) -> None:
        posts.append(payload)
        if len(posts) == 1:
            raise OSError("gateway away")

    trace.flush(post)
    assert [len(json.loads(p)["spans"]) for p in posts] == [TRACE_SPANS_PER_POST, 1]
    trace.flush(posts.append)
    assert len(posts) == 2
