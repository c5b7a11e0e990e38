"""The span of a sandbox's launch or claim: the first of its task's or session's trace, continuing the trace its
creator named in the `mcpexec.dev/traceparent` annotation (an agent framework's), or a new one."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from opentelemetry.trace import Span

from mcpexec import tracing
from mcpexec.api.meta import TRACEPARENT_ANNOTATION


def launch_span(metadata: dict[str, Any]) -> AbstractContextManager[Span]:
    creator = (metadata.get("annotations") or {}).get(TRACEPARENT_ANNOTATION)
    return tracing.span("operator.launch", tracing.task_attributes(metadata), parent=creator)
