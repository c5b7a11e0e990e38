"""The task's trace, continued in the sandbox (docs/observability.md). Standard library only.

The task config's `traceparent` (the operator's span that launched or claimed this sandbox, or `mcpexec run`'s)
makes tracing on; without one nothing is recorded and no header is sent. Each span (the task, a tool call, an LLM
call, a session's execution) is a child of the span current in its thread, or of the task's; every request to the
gateway carries the current one as its `traceparent` header, so the gateway's spans are its children. The finished
spans go to the gateway (`flush`, the sandbox has no other egress), which checks them and exports them.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from runtime.contract import TRACE_SPANS_PER_POST, TRACEPARENT_PATTERN

MAX_UNSENT = 4 * TRACE_SPANS_PER_POST  # spans kept while the gateway is not asked; more are dropped


class _Trace:
    trace_id: str | None = None
    task_span: str = ""
    flags: str = "01"
    unsent: list[dict[str, Any]] = []  # noqa: RUF012 - one per process, guarded by lock
    lock = threading.Lock()


_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcpexec_span", default=None)


def start(traceparent: object) -> None:
    """Continue the trace of `traceparent` (the task config's; anything else than a valid one: no tracing)."""
    match = TRACEPARENT_PATTERN.match(traceparent) if isinstance(traceparent, str) else None
    if match is not None:
        _Trace.trace_id, _Trace.task_span, _Trace.flags = match.groups()


def header() -> str | None:
    """The `traceparent` of the current span, for a request to the gateway (None: not traced)."""
    if _Trace.trace_id is None:
        return None
    return f"00-{_Trace.trace_id}-{_current.get() or _Trace.task_span}-{_Trace.flags}"


@contextlib.contextmanager
def span(name: str, **attributes: str | int) -> Iterator[dict[str, str | int]]:
    """Record the block as a span (its attributes: names, ids and counts, which the gateway's allow-list keeps);
    yields the attributes, to add to. An exception marks it an error."""
    if _Trace.trace_id is None:
        yield attributes
        return
    span_id = os.urandom(8).hex()
    record: dict[str, Any] = {"name": name, "spanId": span_id, "startTimeUnixNano": time.time_ns()}
    parent = _current.get()
    if parent is not None:
        record["parentSpanId"] = parent
    token = _current.set(span_id)
    try:
        yield attributes
    except BaseException:
        record["error"] = True
        raise
    finally:
        _current.reset(token)
        record["endTimeUnixNano"] = time.time_ns()
        record["attributes"] = attributes
        with _Trace.lock:
            if len(_Trace.unsent) < MAX_UNSENT:
                _Trace.unsent.append(record)


def flush(post: Callable[[bytes], object]) -> None:
    """Post the finished spans, TRACE_SPANS_PER_POST at a time; spans are never worth failing a task over, so a
    post that fails drops its spans."""
    with _Trace.lock:
        spans, _Trace.unsent = _Trace.unsent, []
    for first in range(0, len(spans), TRACE_SPANS_PER_POST):
        with contextlib.suppress(Exception):
            post(json.dumps({"spans": spans[first : first + TRACE_SPANS_PER_POST]}).encode())
