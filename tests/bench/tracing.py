"""The gateway's CPU per tool call with tracing off and on, in the same run (docs/observability.md).

Two gateway processes as gateway_overhead runs them (loopback TCP, production logging, the bench task), one with no
OTEL_* variable (tracing off: no tracer provider), one exporting to a real Jaeger (tests/support/trace_receiver.py)
over OTLP/HTTP; `wrk` loads each in turn at 1 and 16 connections, alternating for ROUNDS rounds (medians). The calls
come without a traceparent, so each is a trace of its own: the request, auth, policy, PII scan and upstream-call
spans, batched and exported. Also: what a span costs in a process where tracing is off (`span_off_ns`: entering and
leaving `tracing.span()` and setting an attribute on the no-op span it hands back), against an empty `with`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import timeit
from pathlib import Path
from typing import Any

from mcpexec import tracing
from tests.bench.gateway_overhead import (
    ROUNDS,
    Gateway,
    _gateway_level,
    _http_process,
    _median,
    _open_session,
    _prepare,
    _ratio,
    _tools,
    _wrk_script,
)
from tests.support.trace_receiver import jaeger

LEVELS = (1, 16)
SERVERS = ("everything", "time")
_SPANS = 200_000


def _span_off_ns() -> dict[str, float]:
    """ns per traced block with tracing off, and per empty `with` (the floor of any context manager)."""
    assert not tracing.enabled()
    empty = contextlib.nullcontext()

    def traced() -> None:
        with tracing.span("gateway.policy", {"mcpexec.tool": "crm/lookup"}) as span:
            span.set_attribute("mcpexec.pii.found.EMAIL", 1)

    def bare() -> None:
        with empty:
            pass

    return {
        "span_off_ns": round(min(timeit.repeat(traced, number=_SPANS, repeat=5)) / _SPANS * 1e9, 1),
        "empty_with_ns": round(min(timeit.repeat(bare, number=_SPANS, repeat=5)) / _SPANS * 1e9, 1),
    }


def _server_figures(workdir: Path, server: str, sides: dict[str, Gateway]) -> dict[str, Any]:
    tool, arguments = _tools(workdir)[server]
    path = f"/v1/tools/{server}/{tool}/call"
    scripts = {side: _wrk_script(workdir, f"{server}-trace-{side}", [gw], arguments) for side, gw in sides.items()}
    for gateway in sides.values():
        _open_session(gateway, path, arguments)
    rounds: dict[str, dict[int, list[dict[str, Any]]]] = {side: {} for side in sides}
    for c in LEVELS:
        for _ in range(ROUNDS):
            for side, (base_url, _token, pid) in sides.items():
                rounds[side].setdefault(c, []).append(_gateway_level(f"{base_url}{path}", scripts[side], c, [pid]))
    medians = {side: {c: _median(runs) for c, runs in levels.items()} for side, levels in rounds.items()}
    cpu = {side: {c: medians[side][c]["cpu_ms_per_call"]["gateway"] for c in LEVELS} for side in sides}
    return {
        "gateway_cpu_ms_per_call": {
            str(c): {"off": cpu["off"][c], "on": cpu["on"][c], "on_over_off": _ratio(cpu["on"][c], cpu["off"][c])}
            for c in LEVELS
        },
        "calls_per_s": {str(c): {side: medians[side][c]["calls_per_s"] for side in sides} for c in LEVELS},
        "errors": {side: {str(c): medians[side][c]["errors"] for c in LEVELS} for side in sides},
    }


def run() -> dict[str, Any]:
    figures: dict[str, Any] = {"no_op": _span_off_ns()}
    untraced = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-") as tmp, jaeger() as receiver:
        workdir = Path(tmp)
        _prepare(workdir)
        traced = untraced | {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.otlp_endpoint}
        module = "tests.bench.gateway_overhead"
        with _http_process(module, workdir, untraced) as off, _http_process(module, workdir, traced) as on:
            for server in SERVERS:
                figures[f"{server}/{_tools(workdir)[server][0]}"] = _server_figures(
                    workdir, server, {"off": off, "on": on}
                )
    return figures | {
        "note": f"medians of {ROUNDS} rounds, off and on alternating; on: every call is a trace of its own exported "
        "to a real Jaeger over OTLP/HTTP (batched); off: no OTEL_* variable, no tracer provider",
    }
