"""Approval latency: what a held call adds to the sandbox's code when a person approves it at once.

The real runtime (`python3 -S -m runtime`, a subprocess) calls the demo server's `send_message` CALLS times against
the real gateway (its held calls in a real redis-server, a cluster's way, or in its own process, `mcpexec run`'s).
Baseline, in the same run: the same calls in a task with no approval rule. The approver decides each held call as
soon as the gate lists it, polling the gate every POLL_SECONDS from another thread (so up to that much of the added
time is the approver's own, not the gateway's). Each call's time is measured in the code around `call_tool`, the
first of each run left out (it opens the task's session to the server: seconds, on either side); the figures are
p50/p95 per side and held minus baseline. The sides alternate for ROUNDS rounds.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from typing import Any

from gateway.approvals.gate import Subject
from mcpexec.api.timestamps import now
from tests.integration.runtime.conftest import RuntimeHarness, runtime_harness, start_runtime
from tests.support.components import redis_server

CALLS = 20
ROUNDS = 3
POLL_SECONDS = 0.002

TIMED = f"""
import json, time
seconds = []
for i in range({CALLS}):
    started = time.perf_counter()
    call_tool("demo/send_message", {{"to": "someone@example.com", "subject": f"n{{i}}", "body": "hi"}})
    seconds.append(time.perf_counter() - started)
print(json.dumps(seconds))
"""


def _approve_as_held(harness: RuntimeHarness, subject: Subject, stop: threading.Event, approved: list[str]) -> None:
    gate = harness.gateway.gateway.core.approvals
    while not stop.is_set():
        for held in harness.gateway.run(gate.pending(subject)):
            harness.gateway.run(gate.decide(subject, held.digest, True, "bench", ""))
            approved.append(held.digest)
        time.sleep(POLL_SECONDS)


def _timed_run(harness: RuntimeHarness, name: str, held: bool) -> list[float]:
    spec: dict[str, Any] = {"code": TIMED, "timeoutSeconds": 300}
    if held:
        spec["approval"] = {"tools": ["demo/send_*"]}
    task = harness.task(name, **spec)
    task.metadata.creationTimestamp = now()  # type: ignore[attr-defined]  # its deadline counts from now
    token = harness.gateway.token(task)
    ctx = harness.gateway.run(harness.gateway.gateway.core.authenticator.authenticate(token))
    stop, approved = threading.Event(), list[str]()
    approver = threading.Thread(target=_approve_as_held, args=(harness, Subject.of(ctx), stop, approved), daemon=True)
    approver.start()
    try:
        run = start_runtime(harness.root, task, f"unix://{harness.gateway.socket_path}", token=token).wait(600)
    finally:
        stop.set()
        approver.join()
    if run.exit_code != 0:
        raise RuntimeError(f"{name}: the runtime exited {run.exit_code}: {run.stderr[-500:]}")
    if len(approved) != (CALLS if held else 0):
        raise RuntimeError(f"{name}: {len(approved)} calls were held and approved, not {CALLS if held else 0}")
    seconds: list[float] = json.loads(run.result["result"])
    return seconds[1:]


def _ms(values: list[float], q: int) -> float:
    return round(statistics.quantiles(values, n=100)[q - 1] * 1000, 2)


def _store(harness: RuntimeHarness) -> dict[str, Any]:
    sides: dict[str, list[float]] = {"baseline": [], "held": []}
    for round_ in range(ROUNDS):
        for side in sides:
            sides[side] += _timed_run(harness, f"{side}-{round_}", held=side == "held")
    figures: dict[str, Any] = {
        side: {"calls": len(values), "p50_ms": _ms(values, 50), "p95_ms": _ms(values, 95)}
        for side, values in sides.items()
    }
    figures["added_p50_ms"] = round(figures["held"]["p50_ms"] - figures["baseline"]["p50_ms"], 2)
    figures["held_to_baseline_p50"] = round(figures["held"]["p50_ms"] / figures["baseline"]["p50_ms"], 2)
    print(json.dumps(figures), flush=True)
    return figures


def run() -> dict[str, Any]:
    results: dict[str, Any] = {"calls_per_run": CALLS, "rounds": ROUNDS, "approver_poll_ms": POLL_SECONDS * 1000}
    with runtime_harness() as harness:
        results["in-process"] = _store(harness)
    with redis_server() as url, runtime_harness(redis_url=url) as harness:
        results["redis"] = _store(harness)
    return results
