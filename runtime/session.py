"""An interactive session: code arrives one snippet at a time from the gateway and runs in one namespace.

The runtime long-polls the gateway for the next execution, runs it in the session's Executor (variables, imports
and functions persist; top-level await works), streams its output while it runs if its caller asked for that
(output_stream.py), posts its outcome, and asks again, until the gateway ends the session (403 `no_session`) or
refuses the token (401: the session's task was unregistered). A snippet past its time limit is stopped by the
Executor's timer and the namespace lives on; a snippet that ends the process ends the session (the host sees the
sandbox exit).

The session outlives a gateway or session store outage: the polls are asked again for as long as it takes, and an
execution's output and outcome are sent again until the gateway takes them (delivery.py), for up to the session's
idle timeout; past that the runtime gives up and the session ends, saying why. An execution is never run twice here:
one handed out again (a session store that restarted from older data can queue it again) gets the outcome it had.
"""

from __future__ import annotations

import time
import urllib.parse
from collections import OrderedDict
from typing import Any

from runtime import client, plan, trace
from runtime.contract import SESSION_EXECUTIONS_PATH, SESSION_NEXT_PATH
from runtime.delivery import Delivery
from runtime.executor import Executor, Outcome
from runtime.output import encodable
from runtime.output_stream import OutputStreamer

# The gateway's answers that end a session: it has none open for this sandbox (403), or no longer admits its token
# (401).
_SESSION_OVER = frozenset({401, 403})
# How long an execution's output and outcome are sent again when its gateway does not say (an AgentSession's default
# idle timeout).
DEFAULT_IDLE_TIMEOUT_SECONDS = 900.0
# Executions run here, by id, and the outcomes of the last of them (an outcome is at most about 40,000 characters).
_RAN_KEPT, _OUTCOMES_KEPT = 4096, 32
_FORGOTTEN = "this execution already ran in this session; its outcome is no longer held here"


class _Ran:
    """The executions this runtime ran, with the outcomes of the last ones."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._outcomes: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def outcome(self, execution_id: str) -> dict[str, Any] | None:
        """What to post for an execution handed out again (None: it never ran here)."""
        if execution_id not in self._ids:
            return None
        return self._outcomes.get(execution_id) or {"stdout": "", "stderr": "", "error": _FORGOTTEN, "durationMs": 0}

    def add(self, execution_id: str, report: dict[str, Any]) -> None:
        self._ids[execution_id] = None
        self._outcomes[execution_id] = report
        if len(self._outcomes) > _OUTCOMES_KEPT:
            self._outcomes.popitem(last=False)
        if len(self._ids) > _RAN_KEPT:
            self._ids.popitem(last=False)


def serve(executor: Executor) -> str:
    """Run executions until the gateway ends the session; returns why it ended. Raises ToolError once an outcome
    could not be delivered for the session's idle timeout."""
    ran = _Ran()
    while True:
        try:
            execution = client.long_poll(SESSION_NEXT_PATH)
        except client.ToolError as exc:
            if exc.status in _SESSION_OVER:
                return f"session ended: {exc}"
            raise
        execution_id = str(execution["id"])
        delivery = Delivery(float(execution.get("idleTimeoutSeconds") or DEFAULT_IDLE_TIMEOUT_SECONDS))
        report = ran.outcome(execution_id)
        if report is None:
            with trace.span("runtime.session_execution", **{"mcpexec.execution_id": execution_id}):
                report = _run(executor, execution, delivery)
            ran.add(execution_id, report)
        refused = delivery.post(f"{SESSION_EXECUTIONS_PATH}/{urllib.parse.quote(execution_id, safe='')}", report)
        client.gateway().flush_spans()
        if (lost := client.gateway().vault.lost) is not None:  # its tokens may mean other values now (vault_marks.py)
            return f"vault_lost: {lost}"
        if refused is None:
            continue
        if refused.status in _SESSION_OVER:
            return f"session ended: {refused}"
        if delivery.given_up:
            raise client.ToolError(
                refused.status,
                refused.code,
                f"the gateway took nothing of execution {execution_id} for {delivery.window_seconds:g} s (the "
                f"session's idle timeout), the last answer: {refused}; the session ends",
            )
        # 404: the execution is not running there any more (its session store lost it); any other refusal drops this
        # outcome alone. The session goes on.


def _run(executor: Executor, execution: dict[str, Any], delivery: Delivery) -> dict[str, Any]:
    """Run one execution, streaming its output if its caller reads it as it comes; its outcome as posted."""
    started = time.monotonic()
    streamer = OutputStreamer(str(execution["id"]), delivery) if execution.get("stream") else None
    code, timeout = str(execution["code"]), float(execution["timeoutSeconds"])
    try:
        if execution.get("approval") == plan.PLAN:  # the dry run's output is not the caller's: only the real run's
            outcome = plan.run_as_plan(
                lambda: executor.run(code, timeout - (time.monotonic() - started)),
                lambda: executor.run(
                    code, timeout - (time.monotonic() - started), None if streamer is None else streamer.write
                ),
                lambda done: done.ok,
            )
        else:
            outcome = executor.run(code, timeout, None if streamer is None else streamer.write)
    except client.ToolError as exc:  # the plan denied, or not decided in time: the real run never started
        outcome = Outcome("", False, str(exc), "", str(exc))
    finally:
        if streamer is not None:
            streamer.close()
    return {
        "stdout": encodable(outcome.stdout),
        "stderr": encodable(outcome.stderr),
        "error": None if outcome.error is None else encodable(outcome.error),
        "durationMs": round((time.monotonic() - started) * 1000),
        "chunks": 0 if streamer is None else streamer.chunks,
    }
