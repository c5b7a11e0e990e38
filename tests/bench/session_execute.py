"""Interactive sessions (`mcpexec serve`'s core) under gVisor: the execute round trip of `print(2+2)` on a warm
session, and session create from a warm sandbox vs a cold one.

Round trip: the broker's `execute` (the call the MCP front door makes), through the runtime's long poll over the
gateway's Unix socket, the run in the session's namespace, and the outcome posted back. Baseline, measured in the same
run: the same snippet through the runtime's Executor in this process (no sandbox, no gateway): what the session
adds is the difference. Create: claim to runtime-ready, from a sandbox started ahead (`--warm`) and from none.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any

from mcpexec.local.cli import load_servers
from mcpexec.local.sandbox.runsc import RunscSandbox
from mcpexec.local.sessions import LocalSessions
from runtime.executor import Executor
from tests.support.sessions import SessionsThread

RUNS = 200
CREATES = 8
SNIPPET = "print(2+2)"


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000, 2),
    }


def _in_process() -> list[float]:
    executor = Executor({}, 20_000)
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        outcome = executor.run(SNIPPET, 30)
        samples.append(time.perf_counter() - started)
        assert outcome.stdout == "4\n"
    return samples


def _creates(warm: int) -> tuple[list[float], list[float]]:
    """Claim-to-ready times, and the execute round trips on a warm session (taken from the first)."""
    sessions = LocalSessions(load_servers(None), RunscSandbox(), warm=warm)
    creates, round_trips = [], []
    with SessionsThread(sessions) as thread:
        for number in range(CREATES):
            if warm:  # a claim of a sandbox started ahead and already waiting, as a later MCP session finds it
                thread.run(sessions.warmed())
            started = time.perf_counter()
            session = thread.claim_ready()
            creates.append(time.perf_counter() - started)
            if number == 0 and warm:
                thread.execute(session, SNIPPET)  # the runtime's first snippet imports what later ones reuse
                thread.run(sessions.warmed())  # the replacement's start (runsc, mkfs) would share the CPUs
                for _ in range(RUNS):
                    begun = time.perf_counter()
                    outcome = thread.execute(session, SNIPPET)
                    round_trips.append(time.perf_counter() - begun)
                    assert outcome.stdout == "4\n", outcome
            thread.run(sessions.end(session, "bench"))
    return creates, round_trips


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-bench-sessions-") as home:
        os.environ["MCPEXEC_HOME"] = home
        baseline = _in_process()
        warm_creates, round_trips = _creates(warm=1)
        cold_creates, _ = _creates(warm=0)
    session, plain = _summary(round_trips), _summary(baseline)
    return {
        "runs": RUNS,
        "execute_round_trip_warm_session": session,
        "baseline_in_process_executor": plain,
        "session_overhead_p50_ms": round(session["p50_ms"] - plain["p50_ms"], 2),
        "creates_each": CREATES,
        "session_create_from_warm": _summary(warm_creates),
        "session_create_cold": _summary(cold_creates),
        "reference_executor_ms": 555,
        "runsc_platform": "ptrace (Debian runsc; kvm unavailable in this VM)",
    }
